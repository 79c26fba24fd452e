// The ConfigError message a config text gives, for the config tests' error checks.
#pragma once

#include <string>
#include <vector>

#include "experiments/config/config.hpp"

namespace pelab::test {

// The message of parse_config(text, file, overrides)'s ConfigError, or "(no error)".
inline std::string config_error(const std::string& text, const std::string& file,
                                const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(text, file, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace pelab::test
