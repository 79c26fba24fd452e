// The GEMMs of one training step at configs (a)-(c), one shape at a time: OpenBLAS (the kernel
// OPENBLAS_CORETYPE selects) against the libxsmm path (core/blas_small.cpp), the two alternated, best
// of --rounds (a best-of is what load disturbs least), then per config the step's GEMM time with either,
// counting each shape's calls per step.
//
//   bench_gemm [--config a|b|c|all] [--rounds N]
//
// The shapes and calls are those `bench_train --config X --encoding rope --gemm-shapes` lists (the pieces
// blas::gemm cuts products into; bench/README.md, "GEMM shapes"). Operands are random, every product
// is timed in repeats of about 20 MFLOP so that the clock's resolution does not matter.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/blas.hpp"
#include "core/blas_small.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"

using namespace pelab;

namespace {

struct StepGemm {
  char config;
  bool ta, tb, accumulate;
  int M, N, K, calls;  // calls per training step
};

// bench_train --encoding rope --gemm-shapes, 2026-11-26 (rows: config, trans_a, trans_b, M, N, K, beta 1, calls).
const int kShapes[][8] = {
    {'a', 0, 1, 512, 64, 256, 1, 4},
    {'a', 0, 0, 512, 256, 64, 0, 4},
    {'a', 1, 0, 64, 128, 1024, 0, 4},
    {'a', 1, 0, 128, 64, 1024, 0, 4},
    {'a', 0, 0, 512, 64, 256, 0, 4},
    {'a', 0, 1, 512, 256, 64, 0, 4},
    {'a', 0, 1, 512, 192, 64, 1, 4},
    {'a', 1, 0, 96, 64, 1024, 0, 4},
    {'a', 0, 0, 512, 64, 192, 0, 4},
    {'a', 1, 0, 32, 16, 32, 0, 512},
    {'a', 0, 1, 32, 32, 16, 0, 512},
    {'a', 0, 0, 32, 16, 32, 0, 512},
    {'a', 0, 1, 512, 64, 64, 1, 4},
    {'a', 1, 0, 64, 64, 1024, 0, 2},
    {'a', 0, 0, 512, 64, 64, 0, 4},
    {'a', 0, 1, 1024, 20, 64, 0, 1},
    {'a', 1, 0, 20, 64, 1024, 0, 1},
    {'a', 0, 0, 1024, 64, 20, 0, 1},
    {'b', 0, 1, 1024, 512, 128, 0, 8},
    {'b', 1, 0, 128, 256, 2048, 0, 8},
    {'b', 1, 0, 256, 128, 2048, 0, 8},
    {'b', 0, 0, 1024, 128, 512, 0, 8},
    {'b', 0, 0, 1024, 512, 128, 0, 8},
    {'b', 0, 1, 1024, 128, 512, 1, 8},
    {'b', 1, 0, 192, 128, 2048, 0, 8},
    {'b', 0, 1, 1024, 384, 128, 1, 8},
    {'b', 0, 0, 1024, 128, 384, 0, 8},
    {'b', 1, 0, 64, 32, 64, 0, 1024},
    {'b', 0, 1, 64, 64, 32, 0, 1024},
    {'b', 0, 0, 64, 32, 64, 0, 1024},
    {'b', 1, 0, 64, 128, 2048, 0, 8},
    {'b', 0, 1, 1024, 128, 128, 1, 8},
    {'b', 0, 0, 1024, 128, 128, 0, 8},
    {'b', 0, 1, 1024, 20, 128, 0, 2},
    {'b', 1, 0, 20, 64, 2048, 0, 2},
    {'b', 0, 0, 1024, 128, 20, 0, 2},
    {'c', 1, 0, 512, 256, 2048, 0, 8},
    {'c', 1, 0, 256, 512, 2048, 0, 8},
    {'c', 0, 1, 1024, 1024, 256, 0, 8},
    {'c', 0, 0, 1024, 256, 1024, 0, 8},
    {'c', 0, 0, 1024, 1024, 256, 0, 8},
    {'c', 0, 1, 1024, 256, 1024, 1, 8},
    {'c', 1, 0, 384, 256, 2048, 0, 8},
    {'c', 0, 1, 1024, 768, 256, 1, 8},
    {'c', 0, 0, 1024, 256, 768, 0, 8},
    {'c', 1, 0, 128, 32, 128, 0, 1024},
    {'c', 0, 1, 128, 128, 32, 0, 1024},
    {'c', 0, 0, 128, 32, 128, 0, 1024},
    {'c', 1, 0, 128, 256, 2048, 0, 8},
    {'c', 0, 1, 1024, 256, 256, 1, 8},
    {'c', 0, 0, 1024, 256, 256, 0, 8},
    {'c', 0, 1, 1024, 20, 256, 0, 2},
    {'c', 1, 0, 20, 128, 2048, 0, 2},
    {'c', 0, 0, 1024, 256, 20, 0, 2},
};

// Seconds per call of fn on this shape: the best of `rounds` rounds of repeats.
double time_one(blas::GemmFn fn, const StepGemm& g, const std::vector<real>& A, const std::vector<real>& B,
                std::vector<real>& C, int reps) {
  const std::size_t lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i)
    fn(g.ta, g.tb, g.M, g.N, g.K, 1, A.data(), lda, B.data(), ldb, g.accumulate ? 1 : 0, C.data(), g.N);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

void small_path(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha, const real* A,
                std::size_t lda, const real* B, std::size_t ldb, real beta, real* C, std::size_t ldc) {
  if (!blas::detail::small_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
    blas::gemm_openblas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void run_config(char config, int rounds) {
  std::printf("config %c                              |  OpenBLAS %-8s |  libxsmm path        | speed-up\n", config,
              blas::core_name().c_str());
  std::printf("op      M     N     K     calls/step |    us/call  GFLOP/s |    us/call  GFLOP/s |\n");
  double step_o = 0, step_x = 0;
  for (const auto& r : kShapes) {
    if (r[0] != config) continue;
    const StepGemm g{char(r[0]), r[1] != 0, r[2] != 0, r[6] != 0, r[3], r[4], r[5], r[7]};
    Rng rng(11);
    std::vector<real> A(std::size_t(g.M) * g.K), B(std::size_t(g.K) * g.N), C(std::size_t(g.M) * g.N);
    for (auto* v : {&A, &B, &C})
      for (auto& x : *v) x = static_cast<real>(rng.uniform() - 0.5);
    const double flop = 2.0 * g.M * g.N * g.K;
    const int reps = std::max(1, int(2e7 / flop));
    double to = 1e30, tx = 1e30;
    for (int k = 0; k < rounds; ++k) {
      to = std::min(to, time_one(blas::gemm_openblas, g, A, B, C, reps));
      tx = std::min(tx, time_one(small_path, g, A, B, C, reps));
    }
    step_o += to * g.calls, step_x += tx * g.calls;
    std::printf("%c%c %6d %5d %5d %2s %10d | %10.2f %8.1f | %10.2f %8.1f | %6.2fx\n", g.ta ? 'T' : 'N', g.tb ? 'T' : 'N',
                g.M, g.N, g.K, g.accumulate ? "+=" : "", g.calls, 1e6 * to, flop / to / 1e9, 1e6 * tx, flop / tx / 1e9,
                to / tx);
  }
  std::printf("GEMMs of one step (best-of times x calls): OpenBLAS %.3f ms, libxsmm path %.3f ms: %.2fx\n\n", 1e3 * step_o,
              1e3 * step_x, step_o / step_x);
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "all";
  int rounds = 9;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--config" || a == "--rounds") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--config") config = v;
      else rounds = std::atoi(v.c_str());
    } else {
      std::fprintf(stderr, "bench_gemm: unknown argument '%s'; usage: bench_gemm [--config a|b|c|all] [--rounds N]\n",
                   a.c_str());
      return 2;
    }
  }
  if (!(config == "a" || config == "b" || config == "c" || config == "all") || rounds < 1 || rounds > 1000) {
    std::fprintf(stderr, "bench_gemm: --config takes a, b, c or all and --rounds 1..1000; got '%s' and %d\n",
                 config.c_str(), rounds);
    return 2;
  }
  if (blas::detail::small_gemm_name().empty()) {
    std::fprintf(stderr, "bench_gemm: built without libxsmm (-DPELAB_LIBXSMM=OFF): nothing to compare\n");
    return 2;
  }
  blas::set_num_threads(1);
  std::printf("one thread; best of %d alternated rounds per shape; OpenBLAS kernel %s; libxsmm path: %s\n\n", rounds,
              blas::core_name().c_str(), blas::detail::small_gemm_name().c_str());
  for (const char c : std::string("abc"))
    if (config == "all" || config[0] == c) run_config(c, rounds);
  return 0;
}
