// Declared, validated parameters: an encoding (or any component) lists the keys it accepts with
// type, default and allowed range; resolve() checks what a user gave against that list. The config
// loader reuses it, adding file:line to the message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace pelab {

using Value = std::variant<bool, std::int64_t, double, std::string>;

enum class ValueType { boolean, integer, number, string };
std::string type_name(ValueType t);
std::string value_str(const Value& v);

struct ParamSpec {
  std::string key;
  ValueType type = ValueType::number;
  Value default_value;
  std::optional<double> min, max;     // inclusive bounds for integer / number
  std::vector<std::string> choices;   // allowed values for string (empty: any)
  std::string help;

  std::string allowed() const;        // e.g. "a number in [1, 1e6]" or "one of: interleaved, half"
};

// Resolved values: every declared key present (given or default), types exact.
class Params {
 public:
  bool get_bool(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  double get_number(const std::string& key) const;  // integers widen
  const std::string& get_string(const std::string& key) const;
  const std::map<std::string, Value>& values() const { return values_; }
  void set(const std::string& key, Value v) { values_[key] = std::move(v); }

 private:
  const Value& at(const std::string& key) const;
  std::map<std::string, Value> values_;
};

// Checks `given` against `specs`: unknown keys (naming the nearest known key), wrong types (an integer
// is accepted where a number is expected) and out-of-range values throw Error with `what` as context
// (e.g. "encoding 'rope'"). Missing keys take their defaults.
Params resolve_params(const std::vector<ParamSpec>& specs, const std::map<std::string, Value>& given,
                      const std::string& what);

// The closest of `candidates` to `word` by edit distance, if reasonably close ("did you mean").
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace pelab
