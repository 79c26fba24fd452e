// libFuzzer target: a checkpoint directory whose three files are the input (see fuzz_common.hpp) ->
// choose_checkpoint, then load_checkpoint into a small model and AdamW. Every input must end in a
// loaded checkpoint or a pelab::Error. The files live in a per-process directory (under /dev/shm when
// it exists, so the fuzzer does not wear a disk).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "training/checkpoint.hpp"
#include "training/optimizer_registry.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace fs = std::filesystem;
using namespace pelab;

namespace {

const fs::path& run_dir() {
  // Never destroyed, so the exit handler below can still read it.
  static const fs::path* dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    auto* d = new fs::path(base / ("pelab_fuzz_checkpoint_" + std::to_string(::getpid())));
    fs::remove_all(*d);
    std::atexit([] {  // libFuzzer ends with exit() after -runs
      std::error_code ec;
      fs::remove_all(run_dir(), ec);
    });
    return d;
  }();
  return *dir;
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path ck = run_dir() / "checkpoints" / checkpoint_name(1);
  fs::remove_all(ck);
  fs::create_directories(ck);
  const auto parts = fuzz::split_files(data, size);
  const char* names[] = {"state.json", "weights.safetensors", "optimizer.safetensors"};
  for (std::size_t i = 0; i < parts.size(); ++i) write(ck / names[i], parts[i]);

  fuzz::TinyModule model;
  auto opt = make_optimizer("adamw", {}, OptimizerCommon{}, model.parameters());
  try {
    const CheckpointChoice c = choose_checkpoint(run_dir().string(), true);
    (void)checkpoint_notes(c);
    if (!c.path) (void)no_usable_checkpoint(run_dir().string(), c);
  } catch (const Error&) {
  }
  try {
    (void)load_checkpoint(ck.string(), model, opt.get());
  } catch (const Error&) {
  }
  return 0;
}
