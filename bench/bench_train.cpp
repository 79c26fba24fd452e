// Training-throughput benchmark: tokens/s of one full training step (forward, masked cross-entropy,
// backward, AdamW step, zero_grad) of the decoder-only transformer, plus peak RSS, steady-state
// memory growth and model FLOP/s utilisation against a single-thread sgemm peak: OpenBLAS's 1024^3
// sgemm (the kernel OPENBLAS_CORETYPE selects), and the same product by the GEMM path pelab runs
// (blas::gemm_path: libxsmm's AVX-512 kernels can exceed OpenBLAS's AVX2 peak, so both are printed).
//
//   bench_train [--config a|b|c|d|all] [--encoding NAME[+SCALING]|all] [--positions MODE] [--steps N] [--warmup N]
//               [--threads N] [--peak-gflops X] [--path-peak-gflops X] [--peak-only] [--json] [--gemm-shapes]
//
// `all` encodings: none, learned, sinusoidal, rope, alibi, t5, shaw, fire, kerple, xpos, cope (a speed
// bound compares each to rope in the same run: scripts/bench.sh prints the ratios), then the history
// encodings. Any registered encoding can be named, with additions after '+': an [attention] scaling (rope+ssmax),
// qk_norm, canon or canon_<points> (none+canon), or one of issue 46's layouts: chunk (chunked attention, chunks
// of T/4 in every layer), tuning (Llama 4's temperature tuning in every layer, F = T/4, on in training: what it
// costs), variant (layers "rope,rope.global", the variant with base 10^6). --positions contiguous (default: 0..T-1 on every row, so bias and index tables are
// (1, ...)) or randomized (every row its own sorted ids from [0, 2T), drawn once: the per-row (B, ...)
// path); offset too.
//
// (d) is experiments/reproduce/deletang.toml's shape with one problem size per step (kConfigs below): its
// step time, FLOPs and tokens are means over a fixed sequence of sizes that bench_torch.py repeats.
// PELAB_PERF_CTL=CTL,ACK: profile the timed steps alone (bench/perf_control.hpp).
//
// Each (config, encoding) cell runs in its own process so that peak RSS (VmHWM) is that cell's alone:
// with more than one cell this process measures the sgemm peak once, then re-executes itself per cell.
// bench/bench_torch.py measures the same model in PyTorch; scripts/bench.sh runs both side by side.
//
// --gemm-shapes (one cell, one thread) also times every GEMM of the timed steps, one row per shape (the
// pieces blas::gemm cuts a product into, as the kernel sees them): calls per step, time, GFLOP/s and
// the fraction of the peak. It wraps blas::gemm_kernel through the test hook, so it adds two clock reads
// per product (about 40 ns; the smallest products at (a) take ~0.5 us) and the step times it prints
// include that.
//
// FLOPs per step count the GEMMs only (layer norm, softmax, GELU, RoPE and the optimizer are left
// out, so utilisation is a lower bound of the work done):
//   6 * N_mm * B*T                        matmul weights: forward 2 flops per weight per token,
//                                         backward 4 (input gradient + weight gradient)
//   + n_layers * 3 * 2 * 2 * B*H*T*T*hs   attention scores q k^T and probs @ v, forward 2 GEMMs of
//                                         2*T*T*hs flops per (batch, head), backward twice that;
//                                         the full T x T square (causal half not subtracted)
// with N_mm = n_layers * (3d^2 + d^2 + 2 d d_ff) + d * vocab (qkv, attention projection, MLP, LM head).
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "bench/perf_control.hpp"
#include "core/allocator.hpp"
#include "core/blas.hpp"
#include "core/blas_coretype.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/transformer.hpp"
#include "training/optimizer_registry.hpp"
#include "training/positions.hpp"

using namespace pelab;
using pelab::bench::cpu_now_s;
using pelab::bench::median;
using pelab::bench::parse_int;
using pelab::bench::parse_threads;

namespace {

struct BenchConfig {
  std::string name;
  std::size_t d_model, n_layers, n_heads, batch, seq;  // mixed sizes: seq = the longest T
  int steps, warmup;  // defaults sized so a full scripts/bench.sh run stays within ~10 minutes
  std::size_t max_size = 0;  // > 0: config (d), an encoder over x plus blanks, one size n in 1..max_size per step
};

constexpr std::size_t kVocab = 20;
const std::vector<BenchConfig> kConfigs = {
    {"a", 64, 2, 4, 32, 32, 300, 30},
    {"b", 128, 4, 4, 32, 64, 40, 5},
    {"c", 256, 4, 8, 16, 128, 12, 3},
    // (d): experiments/reproduce/deletang.toml's shape (Delétang et al. 2023): d 64, 5 layers, 8 heads of
    // size 8, batch 128, bidirectional, x of n tokens then n blanks (T = 2n, as reverse_string), the loss on
    // the blanks; no dropout (as (a)-(c)). Warm-up: every size once (1..40), so that the timed steps see
    // cached buffers as a long run does; timed: sizes from mixed_sizes (the same sequence as bench_torch.py).
    {"d", 64, 5, 8, 128, 80, 20, 40, 40},
};
constexpr std::uint64_t kMixedSeed = 2026;  // (d)'s size sequence; bench_torch.py's MIXED_SEED

// (d)'s problem size of timed step i: 1 + splitmix64(seed + i + 1) % max_size (Steele et al. 2014, as
// java.util.SplittableRandom); bench_torch.py's mixed_sizes computes the same sequence.
std::vector<std::size_t> mixed_sizes(std::size_t max_size, int steps) {
  std::vector<std::size_t> sizes(steps);
  std::uint64_t s = kMixedSeed;
  for (auto& n : sizes) {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    n = 1 + (z ^ (z >> 31)) % max_size;
  }
  return sizes;
}
// The eleven attention-family encodings, then the history encodings (docs/encodings.md).
const std::vector<std::string> kEncodings = {"none", "learned", "sinusoidal", "rope", "alibi", "t5",
                                             "shaw", "fire", "kerple", "xpos", "cope",
                                             "integer", "normalized", "binary", "multiplicative", "concat", "recurrent"};

struct Options {
  std::string config = "all", encoding = "all", positions = "contiguous";
  int steps = -1, warmup = -1, threads = 1;  // -1: the config's default
  double peak_gflops = 0;                    // OpenBLAS's 1024^3 sgemm peak; 0: measure
  double path_peak_gflops = 0;               // the same product by the GEMM path pelab uses (blas::gemm_path); 0: measure
  bool peak_only = false, json = false, gemm_shapes = false;
};

// --gemm-shapes: the products of the timed steps by shape. Recorded on the calling thread only (the
// cell runs at one thread), through blas::set_serial_gemm_for_testing.
struct GemmShape {
  bool ta, tb, accumulate;  // accumulate: beta != 0 (backward adding into a gradient)
  std::size_t M, N, K;
  bool operator<(const GemmShape& o) const {
    return std::tie(ta, tb, accumulate, M, N, K) < std::tie(o.ta, o.tb, o.accumulate, o.M, o.N, o.K);
  }
};
struct GemmTally {
  std::size_t calls = 0;
  double seconds = 0;
};
std::map<GemmShape, GemmTally> g_gemm_shapes;
bool g_gemm_recording = false;

void timed_gemm(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha, const real* A,
                std::size_t lda, const real* B, std::size_t ldb, real beta, real* C, std::size_t ldc) {
  if (!g_gemm_recording) return blas::gemm_kernel(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  const auto t0 = std::chrono::steady_clock::now();
  blas::gemm_kernel(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  GemmTally& t = g_gemm_shapes[GemmShape{ta, tb, beta != real(0), M, N, K}];
  ++t.calls;
  t.seconds += s;
}

// The table of --gemm-shapes, the most time first: per step calls, microseconds per call, GFLOP/s and % of
// `peak`, and the share of the median step `step_s`.
void print_gemm_shapes(int steps, double step_s, double peak) {
  std::vector<std::pair<GemmShape, GemmTally>> rows(g_gemm_shapes.begin(), g_gemm_shapes.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::printf("  GEMMs of a timed step by shape (row-major C(M,N) = op(A)(M,K) op(B)(K,N); T: transposed; +=: beta 1):\n");
  std::printf("  %-5s %5s %5s %5s %3s | %6s %9s %8s %6s %6s\n", "op", "M", "N", "K", "", "calls", "us/call",
              "GFLOP/s", "%peak", "%step");
  double total_s = 0, total_flop = 0;
  for (const auto& [g, t] : rows) {
    const double flop = 2.0 * double(g.M) * g.N * g.K, per_step = double(t.calls) / steps;
    const double gf = flop * t.calls / t.seconds / 1e9;
    total_s += t.seconds / steps, total_flop += flop * per_step;
    std::printf("  %c%c    %5zu %5zu %5zu %3s | %6.0f %9.2f %8.1f %6.1f %6.1f\n", g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', g.M,
                g.N, g.K, g.accumulate ? "+=" : "", per_step, 1e6 * t.seconds / t.calls, gf, 100 * gf / peak,
                100 * t.seconds / steps / step_s);
  }
  std::printf("  all GEMMs: %.3f ms per step (%.1f%% of the step), %.3g GFLOP, %.1f GFLOP/s = %.1f%% of the peak\n",
              1e3 * total_s, 100 * total_s / step_s, total_flop / 1e9, total_flop / total_s / 1e9,
              100 * total_flop / total_s / 1e9 / peak);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// A "VmXXX:  1234 kB" field of /proc/self/status, in MB.
double proc_status_mb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::strtod(line.c_str() + n + 1, nullptr) / 1024.0;
  return -1;
}

// Bytes the allocator currently hands out (arena chunks in use + mmapped blocks): a leak or a growing
// cache shows here even when RSS hides it (freed pages kept by malloc).
double heap_in_use_kb() {
  const struct mallinfo2 mi = mallinfo2();
  return (double(mi.uordblks) + double(mi.hblkhd)) / 1024.0;
}

// Single-thread sgemm peak in GFLOP/s: the best of several 1024^3 products by `fn` (a peak is a best
// case; on a loaded machine the best run is the one least disturbed). OpenBLAS's by default: the
// reference that utilisation is measured against; blas::gemm_kernel gives the GEMM path's own.
double measure_peak_gflops(blas::GemmFn fn = blas::gemm_openblas) {
  const std::size_t n = 1024;
  Rng rng(7);
  std::vector<real> A(n * n), B(n * n), C(n * n);
  for (auto& v : A) v = static_cast<real>(rng.uniform() - 0.5);
  for (auto& v : B) v = static_cast<real>(rng.uniform() - 0.5);
  const int saved = blas::num_threads();
  blas::set_num_threads(1);
  double best = 1e30;
  for (int r = 0; r < 8; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(false, false, n, n, n, 1, A.data(), n, B.data(), n, 0, C.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, s);  // run 0 warms caches and OpenBLAS buffers
  }
  blas::set_num_threads(saved);
  return 2.0 * n * n * n / best / 1e9;
}

const BenchConfig& find_config(const std::string& name) {
  for (const auto& c : kConfigs)
    if (c.name == name) return c;
  throw Error("--config: unknown configuration '" + name + "'; allowed: a, b, c, d, all");
}

// A cell: an encoding, then '+'-separated additions: an [attention] scaling ("rope+ssmax": SSMax is a
// scaling, not an encoding), qk_norm ([attention] qk_norm = "on"), canon / canon_<points> (Canon layers
// at ABCD, or at the points given: "none+canon_AC"), chunk, tuning or variant (issue 46's layouts, above);
// scripts/bench.sh compares each with rope alone.
struct Cell {
  std::string encoding, scaling = "none", qk_norm = "off", canon, layout;
};
Cell parse_cell(const std::string& text) {
  Cell c;
  std::size_t at = text.find('+');
  c.encoding = text.substr(0, at);
  while (at != std::string::npos) {
    const std::size_t next = text.find('+', at + 1);
    const std::string add = text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    const auto& names = attention_scaling_names();
    if (add == "qk_norm") c.qk_norm = "on";
    else if (add == "canon") c.canon = "ABCD";
    else if (add.rfind("canon_", 0) == 0) c.canon = add.substr(6);
    else if (add == "chunk" || add == "tuning" || add == "variant") c.layout = add;
    else if (std::find(names.begin(), names.end(), add) != names.end()) c.scaling = add;
    else throw Error("--encoding '" + text + "': unknown '" + add + "' after '+'; expected a scaling, qk_norm, canon, "
                     "canon_<points>, chunk, tuning or variant");
    at = next;
  }
  return c;
}

ModelConfig bench_model_config(const BenchConfig& bc, const std::string& encoding, const PositionConfig& pc) {
  ModelConfig mc;
  mc.vocab = kVocab;
  mc.d_model = bc.d_model;
  mc.n_layers = bc.n_layers;
  mc.n_heads = bc.n_heads;
  const Cell cell = parse_cell(encoding);
  mc.encoding = cell.encoding, mc.attention.scaling = cell.scaling, mc.qk_norm = cell.qk_norm, mc.canon.points = cell.canon;
  if (cell.layout == "chunk") mc.attention.chunk = std::to_string(std::max<std::size_t>(1, bc.seq / 4));
  if (cell.layout == "tuning") {
    mc.attention.temperature_tuning = "1";
    mc.attention.tuning_floor_scale = double(std::max<std::size_t>(1, bc.seq / 4));
    mc.attention.tuning_in_training = true;
  }
  if (cell.layout == "variant") {
    mc.layer_encodings = mc.encoding + "," + mc.encoding + ".global";
    mc.layer_encoding_params[mc.encoding + ".global"]["base"] = Value(1e6);
  }
  mc.train_seq_len = bc.seq;
  mc.causal = bc.max_size == 0;  // (d): an encoder
  if (pc.mode != PositionMode::contiguous) mc.max_position = pc.max_position;  // learned: a table of 2T rows
  return mc;
}

// One fixed random batch: throughput does not depend on the values.
struct BenchBatch {
  IndexArray tokens, targets, positions;  // (B, T)
  Array mask;                             // (B, T), every token counts
  Batch ids;                              // the position ids, drawn once; kept with the batch (as above)
};

// T = bc.seq, or (d) x of n tokens then n blank tokens (T = 2n, the loss on the blanks only).
BenchBatch bench_batch(const BenchConfig& bc, const PositionConfig& pc, std::size_t n = 0) {
  const std::size_t B = bc.batch, T = n ? 2 * n : bc.seq;
  // Every buffer made at its size: a default-constructed Array (one element) replaced later would be
  // freed into the allocator's cache and change the count of buffers the timed steps take from the system.
  BenchBatch b{IndexArray(Shape{B, T}), IndexArray(Shape{B, T}), IndexArray(), Array(Shape{B, T}), Batch()};
  Rng data_rng(1);
  for (auto& v : b.tokens) v = static_cast<std::int32_t>(data_rng.below(kVocab - (n ? 1 : 0)));
  for (auto& v : b.targets) v = static_cast<std::int32_t>(data_rng.below(kVocab));
  b.mask.fill(real(1));
  for (std::size_t r = 0; n && r < B; ++r)
    for (std::size_t t = 0; t < n; ++t) b.tokens(r, n + t) = kVocab - 1, b.mask(r, t) = 0;  // blanks; x not scored
  b.ids.tokens = b.tokens;
  Rng position_rng(2);
  assign_positions(b.ids, pc, position_rng);
  b.positions = b.ids.positions;
  return b;
}

// What the timed steps of one cell measured.
struct CellMeasure {
  std::vector<double> wall, cpu;  // seconds per timed step
  double rss_warm = 0, rss_end = 0, heap_warm = 0, heap_end = 0, peak_rss = 0;  // MB, kB, MB
  memory::Stats mem_warm, mem_end;
  double loss_first = 0, loss_last = 0;
};

// `warmup` untimed steps, then `steps` timed ones, with the memory figures around the timed ones.
// `step` runs one training step and returns its loss.
CellMeasure time_steps(const std::function<double()>& step, int warmup, int steps) {
  CellMeasure m;
  for (int i = 0; i < warmup; ++i) {
    m.loss_last = step();
    if (i == 0) m.loss_first = m.loss_last;
  }
  m.wall.resize(steps), m.cpu.resize(steps);  // before the heap baseline: not a step's allocation
  m.rss_warm = proc_status_mb("VmRSS"), m.heap_warm = heap_in_use_kb();
  m.mem_warm = memory::stats();
  bench::perf_enable();  // PELAB_PERF_CTL: a profile of the timed steps alone
  for (int i = 0; i < steps; ++i) {
    const double c0 = cpu_now_s();
    const auto t0 = std::chrono::steady_clock::now();
    m.loss_last = step();
    m.wall[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.cpu[i] = cpu_now_s() - c0;
    if (warmup == 0 && i == 0) m.loss_first = m.loss_last;
  }
  m.rss_end = proc_status_mb("VmRSS"), m.heap_end = heap_in_use_kb();
  m.mem_end = memory::stats();
  m.peak_rss = proc_status_mb("VmHWM");
  return m;
}

// The figures printed for one cell.
struct CellFigures {
  std::size_t B, T, d, L, params;
  int steps, warmup;
  double rss_base, peak_gflops, path_peak_gflops;
  double flops, step_s, cpu_s, tok_s, gflops, util, path_util;  // (d): means over its sizes
  double mean_T;
  std::size_t sys_allocs;  // tensor buffers obtained from the system during the timed steps: 0 in steady state
  double sys_mb_delta;
};

CellFigures cell_figures(const BenchConfig& bc, const ModelConfig& mc, std::size_t params, int steps, int warmup,
                         double rss_base, const CellMeasure& m, double peak_gflops, double path_peak_gflops) {
  CellFigures f;
  f.B = bc.batch, f.T = bc.seq, f.d = bc.d_model, f.L = bc.n_layers, f.params = params;
  f.steps = steps, f.warmup = warmup, f.rss_base = rss_base, f.peak_gflops = peak_gflops;
  f.path_peak_gflops = path_peak_gflops;
  f.sys_allocs = m.mem_end.system_allocs - m.mem_warm.system_allocs;
  f.sys_mb_delta = (double(m.mem_end.system_bytes) - double(m.mem_warm.system_bytes)) / (1 << 20);
  const std::size_t B = f.B, d = f.d, ff = mc.d_ff ? mc.d_ff : 4 * d, L = f.L;
  const double n_mm = double(L) * (4.0 * d * d + 2.0 * d * ff) + double(d) * kVocab;
  auto flops_at = [&](double T) { return 6.0 * n_mm * B * T + double(L) * 12.0 * B * T * T * d; };
  if (bc.max_size == 0) {
    f.flops = flops_at(double(f.T)), f.mean_T = double(f.T);
    f.step_s = median(m.wall), f.cpu_s = median(m.cpu);
  } else {  // (d): steps of different T; the mean over the fixed sequence (its median step would be one size)
    f.flops = f.mean_T = 0;
    for (std::size_t n : mixed_sizes(bc.max_size, steps)) f.flops += flops_at(2.0 * n) / steps, f.mean_T += 2.0 * n / steps;
    f.step_s = mean(m.wall), f.cpu_s = mean(m.cpu);
  }
  f.tok_s = double(B) * f.mean_T / f.step_s, f.gflops = f.flops / f.step_s / 1e9;
  f.util = f.gflops / peak_gflops, f.path_util = f.gflops / path_peak_gflops;
  return f;
}

void print_cell_json(const BenchConfig& bc, const std::string& encoding, const Options& opt, const CellFigures& f,
                     const CellMeasure& m) {
  std::printf(
      "{\"impl\":\"pelab\",\"config\":\"%s\",\"encoding\":\"%s\",\"positions\":\"%s\",\"threads\":%d,\"batch\":%zu,\"seq\":%zu,"
      "\"d_model\":%zu,\"n_layers\":%zu,\"n_heads\":%zu,\"vocab\":%zu,\"params\":%zu,\"warmup\":%d,"
      "\"steps\":%d,\"mean_seq\":%.3f,\"tokens_per_step\":%.1f,\"step_ms\":%.4f,\"cpu_ms\":%.4f,\"tok_s\":%.1f,\"cpu_tok_s\":%.1f,"
      "\"flops_per_step\":%.6e,\"gflops\":%.4f,\"peak_gflops\":%.4f,\"util\":%.5f,\"gemm_path\":\"%s\","
      "\"path_peak_gflops\":%.4f,\"path_util\":%.5f,\"rss_base_mb\":%.2f,"
      "\"peak_rss_mb\":%.2f,\"rss_warm_mb\":%.2f,\"rss_end_mb\":%.2f,\"rss_delta_mb\":%.3f,"
      "\"heap_delta_kb\":%.1f,\"tensor_sys_allocs\":%zu,\"tensor_sys_mb_delta\":%.3f,"
      "\"tensor_sys_mb\":%.2f,\"loss_first\":%.5f,\"loss_last\":%.9g,\"blas_core\":\"%s\",\"simd\":\"%s\"}\n",
      bc.name.c_str(), encoding.c_str(), opt.positions.c_str(), opt.threads, f.B, f.T, f.d, f.L, bc.n_heads, kVocab,
      f.params, f.warmup, f.steps, f.mean_T, f.B * f.mean_T, f.step_s * 1e3, f.cpu_s * 1e3, f.tok_s,
      f.B * f.mean_T / f.cpu_s,
      f.flops, f.gflops, f.peak_gflops, f.util, blas::gemm_path_name().c_str(), f.path_peak_gflops, f.path_util, f.rss_base, m.peak_rss, m.rss_warm, m.rss_end, m.rss_end - m.rss_warm,
      m.heap_end - m.heap_warm, f.sys_allocs, f.sys_mb_delta, m.mem_end.system_bytes / double(1 << 20), m.loss_first,
      m.loss_last, blas::core_name().c_str(), simd::summary().c_str());
}

void print_cell_text(const BenchConfig& bc, const std::string& encoding, const Options& opt, const CellFigures& f,
                     const CellMeasure& m) {
  std::printf("config %s (d_model %zu, %zu layers, %zu heads, batch %zu, seq %zu), encoding %s, %s positions, "
              "%d thread(s)\n", bc.name.c_str(), f.d, f.L, bc.n_heads, f.B, f.T, encoding.c_str(), opt.positions.c_str(),
              opt.threads);
  if (bc.max_size)
    std::printf("  sizes n = 1..%zu, T = 2n (x, then n blanks scored), bidirectional; warm-up: every size once; "
                "timed: mixed_sizes (seed %llu), mean T %.2f; step = MEAN over the timed steps\n", bc.max_size,
                (unsigned long long)kMixedSeed, f.mean_T);
  std::printf("  %.0f tok/s: %s step %.3f ms (cpu %.3f ms) over %d steps after %d warm-up\n", f.tok_s,
              bc.max_size ? "mean" : "median", f.step_s * 1e3, f.cpu_s * 1e3, f.steps, f.warmup);
  std::printf("  model FLOP/s (forward + backward by formula / %s step): %.2f GFLOP/s (%.3g GFLOP/step)\n", bc.max_size ? "mean" : "median", f.gflops,
              f.flops / 1e9);
  std::printf("    = %.1f%% of the single-thread OpenBLAS sgemm 1024^3 peak %.1f GFLOP/s (kernel %s)\n", 100 * f.util,
              f.peak_gflops, blas::core_name().c_str());
  std::printf("    = %.1f%% of the same product by this build's GEMM path, %s: %.1f GFLOP/s", 100 * f.path_util,
              blas::gemm_path_name().c_str(), f.path_peak_gflops);
  std::printf("\n  peak RSS %.1f MB; RSS after warm-up %.2f MB, after %d more steps %.2f MB (%+.3f MB); "
              "heap in use %+.1f kB\n"
              "  tensor buffers from the system during the timed steps: %zu (%+.3f MB; %.2f MB held)\n"
              "  loss %.4f -> %.4f\n",
              m.peak_rss, m.rss_warm, f.steps, m.rss_end, m.rss_end - m.rss_warm, m.heap_end - m.heap_warm,
              f.sys_allocs, f.sys_mb_delta, m.mem_end.system_bytes / double(1 << 20), m.loss_first, m.loss_last);
}

void run_cell(const BenchConfig& bc, const std::string& encoding, const Options& opt) {
  const double rss_base = proc_status_mb("VmRSS");
  const int steps = opt.steps > 0 ? opt.steps : bc.steps;
  const int warmup = opt.warmup >= 0 ? opt.warmup : bc.warmup;
  parallel::set_threads(opt.threads, "--threads");  // pelab's pool; OpenBLAS stays at 1 thread

  const PositionConfig pc{parse_position_mode(opt.positions), 2 * bc.seq};
  const ModelConfig mc = bench_model_config(bc, encoding, pc);
  Transformer model(mc);
  Rng init_rng(0);
  init_parameters(model, init_rng);
  model.set_training(true);

  OptimizerCommon common;
  common.weight_decay = 0.01;
  auto optimizer = make_optimizer("adamw", {}, common, model.parameters());

  // (d): one batch per size n (T = 2n); warm-up step i runs size i % max_size + 1, timed step i mixed_sizes[i].
  std::vector<BenchBatch> batches;
  if (bc.max_size == 0) batches.push_back(bench_batch(bc, pc));
  for (std::size_t n = 1; n <= bc.max_size; ++n) batches.push_back(bench_batch(bc, pc, n));
  const std::vector<std::size_t> sizes = mixed_sizes(std::max<std::size_t>(bc.max_size, 1), steps);
  if (opt.gemm_shapes) blas::set_serial_gemm_for_testing(timed_gemm);
  int step_count = 0;
  const std::function<double()> step = [&] {
    const int i = step_count++;
    g_gemm_recording = opt.gemm_shapes && i >= warmup;  // the timed steps only
    const BenchBatch& batch = bc.max_size == 0 ? batches[0]
                              : batches[i < warmup ? std::size_t(i) % bc.max_size : sizes[i - warmup] - 1];
    Tensor logits = model.forward(batch.tokens, batch.positions);
    Tensor loss = cross_entropy(logits, batch.targets, &batch.mask);
    const double l = loss.item();
    loss.backward();
    optimizer->step(1e-3);
    model.zero_grad();
    return l;
  };
  const CellMeasure m = time_steps(step, warmup, steps);
  g_gemm_recording = false;
  // Measured after the cell when not given, so that its buffers stay out of the cell's RSS figures.
  const double peak_gflops = opt.peak_gflops > 0 ? opt.peak_gflops : measure_peak_gflops();
  const double path_peak = opt.path_peak_gflops > 0 ? opt.path_peak_gflops : measure_peak_gflops(blas::gemm_kernel);
  const CellFigures f = cell_figures(bc, mc, model.num_parameters(), steps, warmup, rss_base, m, peak_gflops, path_peak);
  if (opt.json) print_cell_json(bc, encoding, opt, f, m);
  else print_cell_text(bc, encoding, opt, f, m);
  if (opt.gemm_shapes) {
    blas::set_serial_gemm_for_testing(nullptr);
    print_gemm_shapes(steps, f.step_s, peak_gflops);
  }
  std::fflush(stdout);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw Error(a + ": missing value");
      return argv[++i];
    };
    if (a == "--config") o.config = value();
    else if (a == "--encoding") o.encoding = value();
    else if (a == "--positions") o.positions = value();
    else if (a == "--steps") o.steps = parse_int(a, value(), 1);
    else if (a == "--warmup") o.warmup = parse_int(a, value(), 0);
    else if (a == "--threads") o.threads = parse_threads(a, value());
    else if (a == "--peak-gflops" || a == "--path-peak-gflops") {
      const char* s = value();
      char* end = nullptr;
      const double v = std::strtod(s, &end);
      if (end == s || *end || !(v > 0)) throw Error(a + ": expected a positive number, got '" + s + "'");
      (a == "--peak-gflops" ? o.peak_gflops : o.path_peak_gflops) = v;
    } else if (a == "--peak-only") o.peak_only = true;
    else if (a == "--json") o.json = true;
    else if (a == "--gemm-shapes") o.gemm_shapes = true;
    else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_train [--config a|b|c|d|all] [--encoding NAME[+ADDITION...]|all] [--positions contiguous|offset|"
                  "randomized]\n                   [--steps N] [--warmup N] [--threads N] [--peak-gflops X] "
                  "[--path-peak-gflops X]\n                   [--peak-only] [--json] [--gemm-shapes]\n");
      std::exit(0);
    } else
      throw Error("unknown argument '" + a + "'; see --help");
  }
  return o;
}

// Runs one cell in a fresh copy of this executable; false if the child failed.
bool run_child(const Options& o, const std::string& config, const std::string& encoding) {
  std::vector<std::string> args = {"bench_train", "--config", config, "--encoding", encoding, "--positions",
                                   o.positions, "--threads", std::to_string(o.threads), "--peak-gflops",
                                   std::to_string(o.peak_gflops), "--path-peak-gflops",
                                   std::to_string(o.path_peak_gflops)};
  if (o.steps > 0) args.insert(args.end(), {"--steps", std::to_string(o.steps)});
  if (o.warmup >= 0) args.insert(args.end(), {"--warmup", std::to_string(o.warmup)});
  if (o.json) args.push_back("--json");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    execv("/proc/self/exe", argv.data());
    std::perror("bench_train: execv /proc/self/exe");
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  blas::select_coretype(argv);  // as pelab does: the benchmark measures the kernel users get
  try {
    Options o = parse(argc, argv);
    parse_position_mode(o.positions);  // throws naming the allowed modes
    std::vector<std::string> configs, encodings;
    if (o.config == "all") {
      for (const auto& c : kConfigs) configs.push_back(c.name);
    } else {
      configs.push_back(find_config(o.config).name);
    }
    if (o.encoding == "all") {
      encodings = kEncodings;
    } else {
      EncodingRegistry::instance().get(parse_cell(o.encoding).encoding);  // throws listing the known names
      encodings.push_back(o.encoding);
    }

    const bool one_cell = configs.size() * encodings.size() == 1;
    if (o.gemm_shapes && (!one_cell || o.threads != 1 || o.json))
      throw Error("--gemm-shapes: times one cell at one thread in text: give one --config and one --encoding, "
                  "--threads 1 and no --json");
    if (o.peak_gflops <= 0 && (o.peak_only || !one_cell)) o.peak_gflops = measure_peak_gflops();
    if (o.path_peak_gflops <= 0 && (o.peak_only || !one_cell)) o.path_peak_gflops = measure_peak_gflops(blas::gemm_kernel);
    if (o.peak_only) {
      const std::string core = blas::core_name(), origin = blas::coretype_origin();
      if (o.json)
        std::printf("{\"impl\":\"sgemm_peak\",\"n\":1024,\"threads\":1,\"peak_gflops\":%.4f,\"blas_core\":\"%s\","
                    "\"blas_core_origin\":\"%s\",\"gemm_path\":\"%s\",\"path_peak_gflops\":%.4f}\n", o.peak_gflops,
                    core.c_str(), origin.c_str(), blas::gemm_path_name().c_str(), o.path_peak_gflops);
      else
        std::printf("single-thread sgemm 1024^3 peak: %.2f GFLOP/s (OpenBLAS kernel %s, %s); by the GEMM path "
                    "(%s): %.2f GFLOP/s\n", o.peak_gflops, core.c_str(), origin.c_str(),
                    blas::gemm_path_name().c_str(), o.path_peak_gflops);
      return 0;
    }
    if (one_cell) {
      run_cell(find_config(configs[0]), encodings[0], o);
      return 0;
    }
    if (!o.json) std::printf("single-thread sgemm 1024^3 peak: %.2f GFLOP/s\n", o.peak_gflops);
    int failed = 0;
    for (const auto& c : configs)
      for (const auto& e : encodings)
        if (!run_child(o, c, e)) {
          std::fprintf(stderr, "bench_train: cell config %s encoding %s failed\n", c.c_str(), e.c_str());
          ++failed;
        }
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 2;
  }
}
