#include "core/params/param_spec.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/tensor.hpp"

namespace pelab {

namespace {
// Range bounds for people, not TOML: integers without an exponent ("1000000", not "1e+06" or "1e6.0").
std::string num_str(double x) {
  std::ostringstream os;
  if (x == std::floor(x) && std::abs(x) < 1e15) os << static_cast<long long>(x);
  else os << x;
  return os.str();
}
}  // namespace

std::string ParamSpec::allowed() const {
  std::ostringstream os;
  if (type == ValueType::string && !choices.empty()) {
    os << "one of: ";
    for (std::size_t i = 0; i < choices.size(); ++i) os << (i ? ", " : "") << choices[i];
    return os.str();
  }
  os << "a" << (type == ValueType::integer ? "n " : " ") << type_name(type);
  if (min && max) os << " in [" << num_str(*min) << ", " << num_str(*max) << (max_exclusive ? ")" : "]");
  else if (min) os << " >= " << num_str(*min);
  else if (max) os << (max_exclusive ? " < " : " <= ") << num_str(*max);
  return os.str();
}

ParamSpec ParamSpec::in(double lo, double hi) const {
  ParamSpec p = *this;
  p.min = lo;
  p.max = hi;
  p.max_exclusive = false;
  return p;
}

ParamSpec ParamSpec::in_half_open(double lo, double hi) const {
  ParamSpec p = in(lo, hi);
  p.max_exclusive = true;
  return p;
}

namespace {
ParamSpec make_param(std::string key, ValueType type, Value default_value, std::string help) {
  ParamSpec p;
  p.key = std::move(key);
  p.type = type;
  p.default_value = std::move(default_value);
  p.help = std::move(help);
  return p;
}
}  // namespace

ParamSpec number_param(std::string key, double default_value, std::string help) {
  return make_param(std::move(key), ValueType::number, default_value, std::move(help));
}
ParamSpec integer_param(std::string key, std::int64_t default_value, std::string help) {
  return make_param(std::move(key), ValueType::integer, default_value, std::move(help));
}
ParamSpec bool_param(std::string key, bool default_value, std::string help) {
  return make_param(std::move(key), ValueType::boolean, default_value, std::move(help));
}
ParamSpec choice_param(std::string key, std::string default_value, std::vector<std::string> choices, std::string help) {
  ParamSpec p = make_param(std::move(key), ValueType::string, std::move(default_value), std::move(help));
  p.choices = std::move(choices);
  return p;
}
ParamSpec string_param(std::string key, std::string default_value, std::string help) {
  return make_param(std::move(key), ValueType::string, std::move(default_value), std::move(help));
}

const Value& Params::at(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw Error("parameter '" + key + "' is not declared");
  return it->second;
}

bool Params::get_bool(const std::string& key) const { return std::get<bool>(at(key)); }
std::int64_t Params::get_int(const std::string& key) const { return std::get<std::int64_t>(at(key)); }
double Params::get_number(const std::string& key) const {
  const Value& v = at(key);
  if (auto i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}
const std::string& Params::get_string(const std::string& key) const { return std::get<std::string>(at(key)); }

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = ~std::size_t(0);
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (best && best_d <= std::max<std::size_t>(2, word.size() / 3)) return best;
  return std::nullopt;
}

Params resolve_params(const std::vector<ParamSpec>& specs, const std::map<std::string, Value>& given,
                      const std::string& what) {
  std::vector<std::string> keys;
  for (const auto& s : specs) keys.push_back(s.key);
  for (const auto& [k, v] : given) {
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    std::string msg = what + ": unknown key '" + k + "'";
    if (auto n = nearest(k, keys)) msg += " (did you mean '" + *n + "'?)";
    if (keys.empty()) msg += "; it takes no parameters";
    else {
      msg += "; allowed keys: ";
      for (std::size_t i = 0; i < keys.size(); ++i) msg += (i ? ", " : "") + keys[i];
    }
    throw Error(msg);
  }
  Params p;
  for (const auto& s : specs) {
    auto it = given.find(s.key);
    Value v = it == given.end() ? s.default_value : it->second;
    auto bad = [&](const std::string& why) {
      throw Error(what + ": key '" + s.key + "' " + why + "; expected " + s.allowed());
    };
    switch (s.type) {
      case ValueType::boolean:
        if (!std::holds_alternative<bool>(v)) bad("has value " + format_value(v));
        break;
      case ValueType::integer:
        if (!std::holds_alternative<std::int64_t>(v)) bad("has value " + format_value(v));
        break;
      case ValueType::number:
        if (auto i = std::get_if<std::int64_t>(&v)) v = static_cast<double>(*i);
        if (!std::holds_alternative<double>(v)) bad("has value " + format_value(v));
        break;
      case ValueType::string:
        if (!std::holds_alternative<std::string>(v)) bad("has value " + format_value(v));
        if (!s.choices.empty() &&
            std::find(s.choices.begin(), s.choices.end(), std::get<std::string>(v)) == s.choices.end())
          bad("has value " + format_value(v));
        break;
    }
    if (s.type == ValueType::integer || s.type == ValueType::number) {
      const double x = s.type == ValueType::integer ? double(std::get<std::int64_t>(v)) : std::get<double>(v);
      const bool above = s.max && (s.max_exclusive ? x >= *s.max : x > *s.max);
      if ((s.min && x < *s.min) || above || x != x) bad("is out of range (" + format_value(v) + ")");
    }
    p.set(s.key, std::move(v));
  }
  return p;
}

}  // namespace pelab
