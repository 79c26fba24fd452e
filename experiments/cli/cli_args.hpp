// Command-line values pelab's subcommands share.
#pragma once

#include <cmath>
#include <cstddef>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor.hpp"  // Error

namespace pelab {

// "a,b,c" -> integers in [1, max]; an item that is not one throws Error("FLAG: 'item' is not ALLOWED").
inline std::vector<std::size_t> parse_positive_list(const std::string& flag, const std::string& csv, long max,
                                                    const std::string& allowed) {
  if (csv.empty() || csv.back() == ',')  // getline would drop a trailing empty item
    throw Error(flag + ": '" + csv + "' is not a comma-separated list; expected items that are each " + allowed);
  std::vector<std::size_t> out;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t pos = 0;
    long v = -1;
    try {
      v = std::stol(item, &pos);
    } catch (const std::exception&) {
    }
    if (v <= 0 || v > max || pos != item.size()) throw Error(flag + ": '" + item + "' is not " + allowed);
    out.push_back(static_cast<std::size_t>(v));
  }
  return out;
}

// CLI11 checks (CLI::Validator(check_unsigned_text, "UINT")) for what its own conversions let through:
// "-1" for an unsigned option becomes 18446744073709551615, and "nan" passes CLI::Range. They return the
// error ("" when fine), which CLI11 prints after the option's name.
inline std::string check_unsigned_text(std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return "'" + text + "' is not a non-negative integer";
  try {
    (void)std::stoull(text);
  } catch (const std::exception&) {
    return "'" + text + "' is out of range (at most 18446744073709551615)";
  }
  return "";
}

// A list option given as '' (CLI11 would store "", which reads as not given).
inline std::string check_nonempty_text(std::string& text) {
  return text.empty() ? "'' is empty; expected a comma-separated list" : "";
}

// check_unsigned_text, and not 0 (a size: show-task --len).
inline std::string check_positive_text(std::string& text) {
  const std::string e = check_unsigned_text(text);
  if (e.empty() && std::stoull(text) == 0) return "'" + text + "' is not a positive integer";
  return e;
}

inline std::string check_finite_text(std::string& text) {
  std::size_t pos = 0;
  double v = NAN;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
  }
  if (pos != text.size() || !std::isfinite(v)) return "'" + text + "' is not a finite number";
  return "";
}

}  // namespace pelab
