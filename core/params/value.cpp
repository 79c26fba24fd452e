#include "core/params/value.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <toml++/toml.h>

#include "core/tensor.hpp"  // Error

namespace pelab {

std::string type_name(ValueType t) {
  switch (t) {
    case ValueType::boolean: return "boolean";
    case ValueType::integer: return "integer";
    case ValueType::number: return "number";
    case ValueType::string: return "string";
  }
  return "?";
}

namespace {

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const double a = std::fabs(x);
  const bool fixed = a == 0 || (a >= 1e-5 && a < 1e15);  // 10000.0 and 0.0001 rather than 1e+04, 1e-04
  for (int p = fixed ? 0 : 1; p <= (fixed ? 40 : 17); ++p) {
    std::snprintf(buf, sizeof buf, fixed ? "%.*f" : "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";  // TOML floats need '.' or an exponent
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

bool scalar_of(const toml::node& n, Value& out) {
  if (auto v = n.as_boolean()) out = Value(v->get());
  else if (auto v = n.as_integer()) out = Value(static_cast<std::int64_t>(v->get()));
  else if (auto v = n.as_floating_point()) out = Value(v->get());
  else if (auto v = n.as_string()) out = Value(v->get());
  else return false;
  return true;
}

}  // namespace

std::string format_value(const Value& v) {
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&v)) return format_number(*d);
  return quoted(std::get<std::string>(v));
}

std::string label_text(const Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return *s;
  return format_value(v);
}

ValueText parse_value_text(const std::string& text) {
  if (text.empty()) throw Error("missing value");
  toml::table doc;
  try {
    doc = toml::parse("v = " + text, std::string("value"));
  } catch (const toml::parse_error& e) {
    // Bare words (rope) are strings; anything that looks like TOML must parse.
    if (std::string("[{\"'").find(text[0]) != std::string::npos)
      throw Error("value is not valid TOML: " + std::string(e.description()) +
                  (text[0] == '[' ? " (quote strings inside arrays: [\"none\", \"rope\"])" : ""));
    return {{Value(text)}, false};
  }
  if (doc.size() != 1) throw Error("the value must be a single TOML value");
  const toml::node& n = *doc.get("v");
  ValueText out;
  Value x;
  if (scalar_of(n, x)) {
    out.values.push_back(x);
    return out;
  }
  const toml::array* a = n.as_array();
  if (!a) throw Error("expected a boolean, integer, number or string, or an array of them");
  out.array = true;
  for (const auto& e : *a) {
    if (!scalar_of(e, x)) throw Error("arrays hold single values here, e.g. [1, 2] or [\"none\", \"rope\"]");
    out.values.push_back(x);
  }
  return out;
}

}  // namespace pelab
