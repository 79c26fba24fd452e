// libFuzzer target: bytes -> safetensors (pelab::parse_safetensors, what load_safetensors runs on a
// file's contents). Every input must end in tensors or a pelab::Error.
#include <cstddef>
#include <cstdint>

#include "core/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const pelab::SafeTensors st = pelab::parse_safetensors(reinterpret_cast<const char*>(data), size, "fuzz");
    // Touch every element so a tensor that claims more data than was copied shows up under ASan.
    double sum = 0;
    for (const auto& [name, a] : st.floats)
      for (std::size_t i = 0; i < a.size(); ++i) sum += a.data()[i];
    for (const auto& [name, a] : st.ints)
      for (std::size_t i = 0; i < a.size(); ++i) sum += a.data()[i];
    volatile double sink = sum;
    (void)sink;
  } catch (const pelab::Error&) {
  }
  return 0;
}
