// Writes seed corpora made by pelab itself: real checkpoints of fuzz::TinyModule (current format and the
// checksum-less version 1) for fuzz_checkpoint, and their safetensors files for fuzz_safetensors.
//   fuzz_seeds OUT_DIR   ->  OUT_DIR/checkpoint/*, OUT_DIR/safetensors/*
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "training/checkpoint.hpp"
#include "training/optimizer_registry.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace fs = std::filesystem;
using namespace pelab;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out / "checkpoint");
  fs::create_directories(out / "safetensors");
  const fs::path work = out / "work";
  fs::remove_all(work);

  fuzz::TinyModule model;
  for (auto& p : model.parameters())
    for (std::size_t i = 0; i < p.tensor.numel(); ++i) p.tensor.mutable_data()[i] = real(0.25) * real(i);
  const auto adamw = make_optimizer("adamw", {}, OptimizerCommon{}, model.parameters());
  const auto sgd = make_optimizer("sgd", {}, OptimizerCommon{}, model.parameters());
  int n = 0;
  for (const Optimizer* opt : {adamw.get(), sgd.get()}) {
    CheckpointState st;
    st.step = 1;
    st.extra = {{"rng_data", {1, 2, 3, 4}}, {"rng_dropout", {5, 6, 7, 8}}, {"seconds", 1.5}};
    const fs::path dir = save_checkpoint(work.string(), model, *opt, st, 0);
    const std::string state = slurp(dir / "state.json"), weights = slurp(dir / "weights.safetensors"),
                      optim = slurp(dir / "optimizer.safetensors");
    write(out / "checkpoint" / ("v2_" + std::to_string(n)), state + fuzz::kSeparator + weights + fuzz::kSeparator + optim);
    auto j = nlohmann::json::parse(state);  // the same checkpoint as pelab wrote it before checksums
    j.erase("files");
    j.erase("state_crc32c");
    j["version"] = 1;
    write(out / "checkpoint" / ("v1_" + std::to_string(n)),
          j.dump(2) + fuzz::kSeparator + weights + fuzz::kSeparator + optim);
    write(out / "safetensors" / ("weights_" + std::to_string(n)), weights);
    write(out / "safetensors" / ("optimizer_" + std::to_string(n)), optim);
    ++n;
  }
  fs::remove_all(work);
  std::printf("fuzz_seeds: wrote %d checkpoint and %d safetensors seeds under %s\n", 2 * n, 2 * n, out.c_str());
  return 0;
}
