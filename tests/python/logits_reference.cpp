// The forward pass `pelab eval` runs (experiments/cli/eval.cpp: the run's config with evaluation-time
// settings, the model, its newest usable checkpoint, eval mode, no tape), on given inputs, for the Python
// module's tests: logits from Python must equal these to the last bit.
//   pelab_logits_reference RUN_DIR B T TOKENS POSITIONS OUT [digits=DIGITS] [KEY=VALUE ...]
// TOKENS, POSITIONS (and DIGITS, the digit indices an Abacus model reads) hold B*T little-endian int32,
// OUT receives B*T*V float32; KEY=VALUE as `pelab eval --set`.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/parallel.hpp"
#include "core/tape.hpp"
#include "experiments/eval/eval_named.hpp"
#include "training/checkpoint.hpp"

using namespace pelab;

namespace {

IndexArray read_ids(const std::string& path, std::size_t B, std::size_t T) {
  IndexArray a(Shape{B, T});
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(a.data()), static_cast<std::streamsize>(B * T * sizeof(std::int32_t)));
  if (!in) throw Error(path + ": expected " + std::to_string(B * T) + " int32");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s RUN_DIR B T TOKENS POSITIONS OUT [KEY=VALUE ...]\n", argv[0]);
    return 2;
  }
  try {
    const std::string run_dir = argv[1];
    const std::size_t B = std::stoul(argv[2]), T = std::stoul(argv[3]);
    std::vector<std::string> sets(argv + 7, argv + argc);
    std::string digits_path;
    if (!sets.empty() && sets[0].rfind("digits=", 0) == 0) digits_path = sets[0].substr(7), sets.erase(sets.begin());
    check_eval_settings(sets, load_config(run_dir + "/config.toml").runs.at(0).config);
    const RunSpec spec = load_eval_config(run_dir, sets);
    use_gemm_path(spec.config);  // as pelab eval: the run's GEMM path
    parallel::set_threads(spec.config.train.threads, "train.threads");
    Transformer model(spec.model);
    const CheckpointChoice choice = choose_checkpoint(run_dir, false);
    if (!choice.path) throw Error(no_usable_checkpoint(run_dir, choice));
    load_checkpoint(*choice.path, model, nullptr);
    model.set_training(false);
    NoGrad ng;
    ForwardOptions fo;
    IndexArray digits;
    if (!digits_path.empty()) digits = read_ids(digits_path, B, T), fo.digit_index = &digits;
    const Tensor logits = model.forward(read_ids(argv[4], B, T), read_ids(argv[5], B, T), fo);  // (B, T, V)
    std::ofstream out(argv[6], std::ios::binary);
    out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.numel() * sizeof(float)));
    return out ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
