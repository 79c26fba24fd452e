// A setting's value (a config key, an encoding/task/optimizer parameter, a swept value) and its one
// text form: TOML literal syntax. format_value is the only printer, parse_value_text the only reader
// of values written as text (config overrides); files are read by the TOML parser itself.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace pelab {

using Value = std::variant<bool, std::int64_t, double, std::string>;

enum class ValueType { boolean, integer, number, string };
std::string type_name(ValueType t);

// The TOML literal: true, 42, 0.001 (the shortest text that reads back to the same double, always with
// a '.' or an exponent), "quoted \"string\"". Used in resolved configs, messages and `pelab list`.
std::string format_value(const Value& v);
// As in sweep labels and report columns: strings bare (rope), everything else as format_value.
std::string label_text(const Value& v);

// A value written as text (--set section.key=VALUE): TOML syntax ("3", "1e-3", "true", "\"a b\"",
// "[1, 2]"); a bare word is a string (rope). Arrays give their scalar elements with `array` set.
// Throws Error ("value is not valid TOML: ...") otherwise.
struct ValueText {
  std::vector<Value> values;  // one unless `array`
  bool array = false;
};
ValueText parse_value_text(const std::string& text);

}  // namespace pelab
