// libFuzzer target: TOML text -> validated experiment config (pelab::parse_config). Every input must
// end in a config or a pelab::Error; any other exception, crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "experiments/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const pelab::LoadedConfig loaded = pelab::parse_config(text, "fuzz.toml");
    // A valid config must also write and read back (the run directory keeps it as TOML).
    (void)pelab::parse_config(pelab::to_toml(loaded.config), "fuzz-roundtrip.toml");
  } catch (const pelab::Error&) {
  }
  return 0;
}
