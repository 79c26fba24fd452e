// Packaged libraries against pelab's hand-written code, on the same inputs:
//   exp, erf  xsimd::exp / xsimd::erf (libxsimd-dev) against detail::exp_nonpos / erf_fast (core/ops/fast_math.hpp)
//   crc32c    ISA-L's crc32_iscsi (libisal-dev) against pelab::crc32c (training/checksum.cpp), 1 to 64 MiB
//   threads   OpenMP `schedule(static)` and a std::thread per region against parallel::for_range (core/parallel.hpp),
//             all three running the same fixed plan of pieces
// Each case runs the sides alternately (A, B, A, B, ...) and prints the min and the median over the repeats, in
// ms, and whether the results are bit-identical. The decisions: docs/performance.md, "Libraries we did not adopt".
//   ./build/bench/bench_libraries [--reps N] [--threads N]   (PELAB_BENCH_ONLY=math|crc|threads: one section)
// Built twice (bench/CMakeLists.txt): bench_libraries at the build's baseline (x86-64-v2: SSE4.2, where xsimd
// picks 4-float batches), and on x86-64 with GCC bench_libraries_v4 with -march=x86-64-v4 (AVX-512: 16-float
// batches on both sides; runs only on a CPU with AVX-512). Both with -ffp-contract=fast, as core/ops/kernels.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "core/ops/fast_math.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"
#include "training/checksum.hpp"

#ifdef PELAB_BENCH_ISAL
#include <isa-l/crc.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

int g_reps = 21;

double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Stats {
  double min = 0, median = 0;
};
Stats stats(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

// Times the sides alternately, after one warm-up round; one Stats per side. settle_ms: a pause before each
// timing (untimed), so that the previous side's idle workers (the pool's and OpenMP's spin before they sleep)
// do not take the cores from the next side.
std::vector<Stats> compare(const std::vector<std::function<void()>>& sides, int settle_ms = 0) {
  for (const auto& f : sides) f();
  std::vector<std::vector<double>> t(sides.size());
  for (int r = 0; r < g_reps; ++r)
    for (std::size_t s = 0; s < sides.size(); ++s) {
      if (settle_ms) std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
      const double t0 = now_ms();
      sides[s]();
      t[s].push_back(now_ms() - t0);
    }
  std::vector<Stats> out;
  for (auto& v : t) out.push_back(stats(v));
  return out;
}

void print_row(const std::string& what, const std::vector<std::string>& names, const std::vector<Stats>& s,
               const std::string& note) {
  std::printf("%-34s", what.c_str());
  for (std::size_t i = 0; i < s.size(); ++i) std::printf("  %s %8.3f / %8.3f", names[i].c_str(), s[i].min, s[i].median);
  std::printf("  %s\n", note.c_str());
}

// ---- exp and erf ----

// The loop as the softmax runs it (core/ops/kernels.cpp), at the build's baseline and as a PELAB_HOT clone.
void exp_ours(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = pelab::detail::exp_nonpos(x[i]);
}
PELAB_HOT void exp_ours_hot(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = pelab::detail::exp_nonpos(x[i]);
}
void erf_ours(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = pelab::detail::erf_fast(x[i]);
}
PELAB_HOT void erf_ours_hot(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = pelab::detail::erf_fast(x[i]);
}

template <class F>
void xsimd_map(const float* x, float* y, std::size_t n, F f) {
  using batch = xsimd::batch<float>;
  const std::size_t w = batch::size;
  std::size_t i = 0;
  for (; i + w <= n; i += w) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n) {  // the tail, padded to one batch
    alignas(64) float in[batch::size] = {}, out[batch::size];
    std::copy(x + i, x + n, in);
    f(batch::load_aligned(in)).store_aligned(out);
    std::copy(out, out + (n - i), y + i);
  }
}
void exp_xsimd(const float* x, float* y, std::size_t n) {
  xsimd_map(x, y, n, [](const xsimd::batch<float>& b) { return xsimd::exp(b); });
}
void erf_xsimd(const float* x, float* y, std::size_t n) {
  xsimd_map(x, y, n, [](const xsimd::batch<float>& b) { return xsimd::erf(b); });
}

// Elements whose bits differ, and each side's largest error against double libm (relative for exp, absolute
// for erf).
std::string accuracy(const std::vector<float>& x, const std::vector<float>& a, const std::vector<float>& b, bool rel,
                     double (*ref)(double)) {
  std::size_t differ = 0;
  double ea = 0, eb = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    differ += std::memcmp(&a[i], &b[i], 4) != 0;
    const double r = ref(double(x[i]));
    const double scale = rel && r != 0 ? std::abs(r) : 1.0;
    if (rel && r < 1e-37) continue;  // below float's normal range (exp_nonpos flushes x < -86 to 0)
    ea = std::max(ea, std::abs(double(a[i]) - r) / scale);
    eb = std::max(eb, std::abs(double(b[i]) - r) / scale);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "bits differ in %zu of %zu; max %s error ours %.2e, xsimd %.2e", differ, x.size(),
                rel ? "rel." : "abs.", ea, eb);
  return buf;
}

void bench_math() {
  const std::size_t n = 1 << 20;
  std::vector<float> xe(n), xr(n), y1(n), y2(n), y3(n);
  for (std::size_t i = 0; i < n; ++i) {
    xe[i] = -90.0f * float(i) / float(n);          // exp: [-90, 0], the softmax's range
    xr[i] = -5.0f + 10.0f * float(i) / float(n);   // erf: [-5, 5]
  }
  std::printf("\n%zu floats per call; min / median ms over %d repeats\n", n, g_reps);
  const std::vector<std::string> names = {"ours", "ours(hot)", "xsimd"};
  auto s = compare({[&] { exp_ours(xe.data(), y1.data(), n); }, [&] { exp_ours_hot(xe.data(), y3.data(), n); },
                    [&] { exp_xsimd(xe.data(), y2.data(), n); }});
  print_row("exp, x in [-90, 0]", names, s, "");
  std::printf("    %s; ours(hot) vs ours: %s\n", accuracy(xe, y1, y2, true, [](double v) { return std::exp(v); }).c_str(),
              std::memcmp(y1.data(), y3.data(), n * 4) ? "bits differ" : "same bits");
  s = compare({[&] { erf_ours(xr.data(), y1.data(), n); }, [&] { erf_ours_hot(xr.data(), y3.data(), n); },
               [&] { erf_xsimd(xr.data(), y2.data(), n); }});
  print_row("erf, x in [-5, 5]", names, s, "");
  std::printf("    %s; ours(hot) vs ours: %s\n", accuracy(xr, y1, y2, false, [](double v) { return std::erf(v); }).c_str(),
              std::memcmp(y1.data(), y3.data(), n * 4) ? "bits differ" : "same bits");
}

// ---- CRC32C ----

void bench_crc() {
  std::printf("\nCRC32C; min / median ms over %d repeats\n", g_reps);
  for (std::size_t mib : {1, 4, 16, 64}) {
    std::vector<unsigned char> buf(mib << 20);
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    for (auto& c : buf) s = s * 6364136223846793005ull + 1442695040888963407ull, c = static_cast<unsigned char>(s >> 56);
    std::uint32_t ours = 0;
#ifdef PELAB_BENCH_ISAL
    std::uint32_t lib = 0;
    // ISA-L's crc32_iscsi takes and returns the CRC register without pelab's init/final xor: crc32c = ~f(~0).
    const auto isal = [&] { lib = ~crc32_iscsi(buf.data(), int(buf.size()), 0xFFFFFFFFu); };
    const auto st = compare({[&] { ours = pelab::crc32c(buf.data(), buf.size()); }, isal});
    char note[96];
    std::snprintf(note, sizeof note, "%s; ours %.2f GB/s, ISA-L %.2f GB/s", ours == lib ? "same CRC" : "CRC DIFFERS",
                  double(buf.size()) / st[0].min * 1e-6, double(buf.size()) / st[1].min * 1e-6);
    print_row(std::to_string(mib) + " MiB", {"ours", "isa-l"}, st, note);
#else
    const auto st = compare({[&] { ours = pelab::crc32c(buf.data(), buf.size()); }});
    print_row(std::to_string(mib) + " MiB", {"ours"}, st, "(ISA-L not found at configure time: libisal-dev)");
#endif
  }
}

// ---- threads ----

// One region: the fixed plan of pieces(n, grain) over [0, n), each piece a sum of its slice into its own slot,
// run by the pool, by OpenMP schedule(static) over the pieces (contiguous groups: the same plan), and by
// std::thread spawned per region. All three compute the same slots.
void bench_threads(int threads) {
  namespace par = pelab::parallel;
  par::set_threads(threads, "--threads");
  std::printf("\nthreads = %d; one timing = 200 regions of pieces(n, 1024) over n floats; min / median ms over %d repeats\n",
              threads, g_reps);
  for (std::size_t n : {std::size_t(8) << 10, std::size_t(256) << 10}) {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = float(i % 97) * 0.01f;
    const std::size_t p = par::pieces(n, 1024), k = std::min<std::size_t>(std::size_t(threads), p);
    std::vector<float> a(p), b(p), c(p);
    const auto piece = [&](std::vector<float>& out, std::size_t c0) {
      const std::size_t lo = par::chunk_begin(n, p, c0), hi = par::chunk_begin(n, p, c0 + 1);
      float s = 0;
      for (std::size_t i = lo; i < hi; ++i) s += x[i];
      out[c0] = s;
    };
    const auto pool = [&] {
      for (int r = 0; r < 200; ++r)
        par::for_range(p, 1, [&](std::size_t, std::size_t lo, std::size_t hi) {
          for (std::size_t c0 = lo; c0 < hi; ++c0) piece(a, c0);
        });
    };
    const auto spawn = [&] {
      for (int r = 0; r < 200; ++r) {
        std::vector<std::thread> ts;
        for (std::size_t w = 1; w < k; ++w)
          ts.emplace_back([&, w] {
            for (std::size_t c0 = par::chunk_begin(p, k, w); c0 < par::chunk_begin(p, k, w + 1); ++c0) piece(c, c0);
          });
        for (std::size_t c0 = 0; c0 < par::chunk_begin(p, k, 1); ++c0) piece(c, c0);
        for (auto& t : ts) t.join();
      }
    };
#ifdef _OPENMP
    const auto omp = [&] {
      for (int r = 0; r < 200; ++r) {
#pragma omp parallel for schedule(static) num_threads(int(k))
        for (std::size_t c0 = 0; c0 < p; ++c0) piece(b, c0);
      }
    };
    const auto st = compare({pool, omp, spawn}, 50);
    print_row(std::to_string(n) + " floats, " + std::to_string(p) + " pieces", {"pool", "omp", "spawn"}, st,
              a == b && a == c ? "same sums" : "SUMS DIFFER");
#else
    const auto st = compare({pool, spawn}, 50);
    print_row(std::to_string(n) + " floats, " + std::to_string(p) + " pieces", {"pool", "spawn"}, st,
              a == c ? "same sums (OpenMP not found at configure time)" : "SUMS DIFFER");
#endif
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = std::min(2, pelab::parallel::hardware_threads());
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--reps") g_reps = std::max(3, std::atoi(argv[i + 1]));
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else return std::fprintf(stderr, "usage: bench_libraries [--reps N] [--threads N]\n"), 2;
  }
  std::printf("bench_libraries: %s; xsimd batch<float> = %zu lanes (%s)\n", pelab::simd::summary().c_str(),
              xsimd::batch<float>::size, xsimd::default_arch::name());
  const std::string only = std::getenv("PELAB_BENCH_ONLY") ? std::getenv("PELAB_BENCH_ONLY") : "";
  if (only.empty() || only == "math") bench_math();
  if (only.empty() || only == "crc") bench_crc();
  if (only.empty() || only == "threads") bench_threads(threads);
  return 0;
}
