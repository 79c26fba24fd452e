// Command-line values pelab's subcommands share.
#pragma once

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

}  // namespace pelab
