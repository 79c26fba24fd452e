// libFuzzer target: text -> the bias file of the `abc` encoding (pelab::parse_abc_bias, what read_abc_bias
// runs on a file's contents; layers/positional/abc_bias.hpp). Every input must end in a bias or a
// pelab::Error, and a bias must print back to text that reads as the same bias.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "layers/positional/abc_bias.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pelab::AbcBias b;
  try {
    b = pelab::parse_abc_bias(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const pelab::Error&) {
    return 0;
  }
  const pelab::AbcBias again = pelab::parse_abc_bias(pelab::abc_bias_text(b, {"round trip"}), "fuzz");
  if (again.heads.size() != b.heads.size()) std::abort();
  for (std::size_t h = 0; h < b.heads.size(); ++h)
    if (again.heads[h].masked != b.heads[h].masked || again.heads[h].kept != b.heads[h].kept) std::abort();
  return 0;
}
