// Shared by the fuzz targets and their seed writer: the checkpoint input format and the module the
// checkpoint target loads into.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "layers/module.hpp"

namespace pelab::fuzz {

// A fuzzed checkpoint directory is one input: state.json, then weights.safetensors, then
// optimizer.safetensors, separated by kSeparator. Fewer parts mean missing files.
inline const std::string kSeparator = "\n--pelab-fuzz-file--\n";

inline std::vector<std::string> split_files(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (parts.size() < 2) {
    const std::size_t at = in.find(kSeparator, start);
    if (at == std::string::npos) break;
    parts.push_back(in.substr(start, at - start));
    start = at + kSeparator.size();
  }
  parts.push_back(in.substr(start));
  return parts;
}

// Two parameters, small enough that seeds stay a few hundred bytes.
class TinyModule : public Module {
 public:
  TinyModule() {
    add_parameter("w", {3, 4}, ParamKind::weight);
    add_parameter("b", {4}, ParamKind::bias);
  }
};

}  // namespace pelab::fuzz
