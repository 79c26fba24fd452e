// Declared, validated parameters: an encoding, task or optimizer (or any plugin) lists the keys it
// accepts with type, default and allowed range; resolve_params() checks what a user gave against that
// list. The config loader reuses it for every key, adding file:line to the message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/params/value.hpp"

namespace pelab {

struct ParamSpec {
  std::string key;
  ValueType type = ValueType::number;
  Value default_value;
  std::optional<double> min, max;     // bounds for integer / number, inclusive...
  std::vector<std::string> choices;   // allowed values for string (empty: any)
  std::string help;
  bool max_exclusive = false;         // ...except max when set: [min, max)

  std::string allowed() const;        // e.g. "a number in [1, 1000000]", "a number in [0, 1)", "one of: a, b"

  // Bounds, chained on the named constructors below: number_param(...).in(0, 1).
  ParamSpec in(double lo, double hi) const;            // [lo, hi]
  ParamSpec in_half_open(double lo, double hi) const;  // [lo, hi)
};

// Named constructors, so that a plugin's table of parameters reads without opening this struct:
//   number_param("base", 10000.0, "wavelength base").in(2, 1e9)
ParamSpec number_param(std::string key, double default_value, std::string help);
ParamSpec integer_param(std::string key, std::int64_t default_value, std::string help);
ParamSpec bool_param(std::string key, bool default_value, std::string help);
ParamSpec choice_param(std::string key, std::string default_value, std::vector<std::string> choices, std::string help);
ParamSpec string_param(std::string key, std::string default_value, std::string help);  // any string

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
