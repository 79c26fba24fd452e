// Looped depth's cost per applied block ([loop], layers/transformer.hpp; docs/performance.md#looped-depth):
// CPU time of one training step's forward, cross-entropy and backward of a model whose one block is
// applied N times (input injected before every application after the first) against a plain model of N
// blocks, the same shape otherwise. The two alternate step by step, so that load and frequency drift hit
// both; min and median over the steps, and their ratio (looped / plain; the target is <= 1.1). The
// optimizer step is left out: the looped model has 1/N the weights, which would flatter it.
//
//   bench_looped [--loops N] [--d-model D] [--tokens T] [--batch B] [--steps S] [--threads K]
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/parallel.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"

using namespace pelab;

namespace {

struct Options {
  int loops = 4, d_model = 128, tokens = 128, batch = 8, steps = 30, threads = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    int& slot = f == "--loops" ? o.loops : f == "--d-model" ? o.d_model : f == "--tokens" ? o.tokens
                : f == "--batch" ? o.batch : f == "--steps" ? o.steps : f == "--threads" ? o.threads
                : throw Error("bench_looped: unknown flag " + f);
    slot = f == "--threads" ? bench::parse_threads(f, argv[i + 1]) : bench::parse_int(f, argv[i + 1], 1);
  }
  return o;
}

ModelConfig model_config(const Options& o, bool looped) {
  ModelConfig c;
  c.vocab = 64, c.d_model = std::size_t(o.d_model), c.n_heads = 4, c.encoding = "rope";
  c.train_seq_len = std::size_t(o.tokens);
  c.n_layers = looped ? 1 : std::size_t(o.loops);
  if (looped) c.loop.times = std::size_t(o.loops);
  return c;
}

// CPU seconds of one forward + cross-entropy + backward.
double step(Transformer& m, const IndexArray& tok, const IndexArray& pos, const IndexArray& targets) {
  const double t0 = bench::cpu_now_s();
  cross_entropy(m.forward(tok, pos), targets).backward();
  m.zero_grad();
  Tape::current().clear();
  return bench::cpu_now_s() - t0;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  parallel::set_threads(o.threads);
  Transformer plain(model_config(o, false)), looped(model_config(o, true));
  Rng rng(1);
  init_parameters(plain, rng);
  init_parameters(looped, rng);
  const std::size_t B = std::size_t(o.batch), T = std::size_t(o.tokens);
  IndexArray tok(Shape{B, T}), targets(Shape{B, T});
  for (auto& v : tok) v = std::int32_t(rng.below(64));
  for (auto& v : targets) v = std::int32_t(rng.below(64));
  const IndexArray pos = default_positions(B, T);
  for (int w = 0; w < 3; ++w) step(plain, tok, pos, targets), step(looped, tok, pos, targets);  // warm-up
  std::vector<double> p, l;
  for (int s = 0; s < o.steps; ++s) {
    p.push_back(step(plain, tok, pos, targets));
    l.push_back(step(looped, tok, pos, targets));
  }
  const auto min = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  std::printf("bench_looped: rope, d_model %d, B %zu, T %zu, %d thread(s), %d steps each, alternating\n", o.d_model, B, T,
              o.threads, o.steps);
  std::printf("  plain  %d blocks:          min %8.2f ms  median %8.2f ms  (%zu parameters)\n", o.loops, 1e3 * min(p),
              1e3 * bench::median(p), plain.num_parameters());
  std::printf("  looped 1 block x %d loops: min %8.2f ms  median %8.2f ms  (%zu parameters)\n", o.loops, 1e3 * min(l),
              1e3 * bench::median(l), looped.num_parameters());
  std::printf("  looped / plain: min %.3f  median %.3f  (target <= 1.1)\n", min(l) / min(p), bench::median(l) / bench::median(p));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
