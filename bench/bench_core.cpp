// Core speed benchmark: the tape's overhead over bare BLAS for the two hot paths.
//   1) matmul forward + backward through the tape vs its three bare GEMMs (forward, dA, dB).
//   2) the fused attention core forward + backward vs its bare per-(batch, head) GEMMs.
//   3) attention with relative keys and values (Shaw) vs plain attention and vs its bare GEMMs.
// Single-threaded BLAS by default (--threads N to change). Each case is timed twice: with glibc's
// default malloc, then with freed memory kept in the heap (see main).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/blas.hpp"
#include "core/ops/attention.hpp"
#include "core/ops/matmul.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"

using namespace pelab;

namespace {

constexpr int kWarmup = 5, kReps = 31;

// One run's wall time (steady_clock) and process CPU time (user + system, all threads), in ms. The CPU
// time does not count time the process spent preempted, so it stays meaningful on a loaded machine.
struct Timing {
  double wall = 0, cpu = 0;
};

double cpu_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

Timing time_once(const std::function<void()>& fn) {
  const double c0 = cpu_now_ms();
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  const auto t1 = std::chrono::steady_clock::now();
  return {std::chrono::duration<double, std::milli>(t1 - t0).count(), cpu_now_ms() - c0};
}

double median(std::vector<double> t) {
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// Medians of a and b, run alternately so that load from other processes hits both alike.
std::pair<Timing, Timing> compare(const std::function<void()>& a, const std::function<void()>& b) {
  for (int i = 0; i < kWarmup; ++i) a(), b();
  std::vector<double> wa(kReps), wb(kReps), ca(kReps), cb(kReps);
  for (int i = 0; i < kReps; ++i) {
    const Timing ta = time_once(a), tb = time_once(b);
    wa[i] = ta.wall, ca[i] = ta.cpu, wb[i] = tb.wall, cb[i] = tb.cpu;
  }
  return {{median(wa), median(ca)}, {median(wb), median(cb)}};
}

Array random_array(const Shape& shape, Rng& rng, double scale = 1.0) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(rng.normal() * scale);
  return a;
}

void row(const std::string& name, std::pair<Timing, Timing> t, double target) {
  const double ratio = t.first.wall / t.second.wall, cpu_ratio = t.first.cpu / t.second.cpu;
  std::printf("%-58s %8.3f %8.3f %7.3fx %7.3fx %6.2fx  %s\n", name.c_str(), t.first.wall, t.second.wall, ratio,
              cpu_ratio, target, ratio <= target ? "ok" : "MISSED");
}

// 1) matmul (2048, 128) x (128, 384), forward + backward, vs its three bare GEMMs.
void bench_matmul(Rng& rng, const std::string& tag) {
  const std::size_t M = 2048, K = 128, N = 384;
  Tensor A(random_array({M, K}, rng), true), W(random_array({K, N}, rng, 0.1), true);
  const Array seed = xt::ones<real>({M, N});
  Array C(Shape{M, N}), dA = xt::zeros<real>({M, K}), dW = xt::zeros<real>({K, N});
  const real *pa = A.data(), *pw = W.data(), *pg = seed.data();
  auto bare = [&] {
    blas::gemm(false, false, M, N, K, 1, pa, K, pw, N, 0, C.data(), N);  // C = A W
    blas::gemm(false, true, M, K, N, 1, pg, N, pw, N, 1, dA.data(), K);  // dA += G W^T
    blas::gemm(true, false, K, N, M, 1, pa, K, pg, N, 1, dW.data(), N);  // dW += A^T G
  };
  // A training step: fresh gradients (zero_grad), forward, backward seeded with ones.
  row("matmul (2048,128)x(128,384) f+b" + tag, compare([&] {
        A.zero_grad();
        W.zero_grad();
        matmul(A, W).backward(seed);
      }, bare), 1.1);
  // Gradients accumulating across steps: no gradient buffers to allocate.
  row("  same, grads accumulating (no zero_grad)" + tag, compare([&] { matmul(A, W).backward(seed); }, bare), 1.1);
}

// 2) attention core B=32, H=4, T=64, hs=32, causal, forward + backward, vs its bare GEMMs.
void bench_attention(Rng& rng, const std::string& tag) {
  const std::size_t B = 32, H = 4, T = 64, hs = 32, BH = B * H;
  Tensor q(random_array({B, H, T, hs}, rng), true), k(random_array({B, H, T, hs}, rng), true),
      v(random_array({B, H, T, hs}, rng), true);
  const Array seed = random_array({B, H, T, hs}, rng);
  // Bare GEMMs on preallocated buffers: forward S = q k^T, O = P v; backward dV += P^T dO,
  // dP = dO V^T, dQ += dS K, dK += dS^T Q (dS stands in the dP buffer).
  Array S(Shape{BH, T, T}), P = xt::ones<real>({BH, T, T}) / real(T), O(Shape{BH, T, hs}), dP(Shape{T, T});
  Array dq = xt::zeros<real>({BH, T, hs}), dk = dq, dv = dq;
  const real sc = real(1) / std::sqrt(real(hs));
  const real *pq = q.data(), *pk = k.data(), *pv = v.data(), *pg = seed.data();
  auto bare_fwd = [&] {
    for (std::size_t i = 0; i < BH; ++i) {
      const std::size_t a = i * T * hs, s = i * T * T;
      blas::gemm(false, true, T, T, hs, sc, pq + a, hs, pk + a, hs, 0, S.data() + s, T);
      blas::gemm(false, false, T, hs, T, 1, P.data() + s, T, pv + a, hs, 0, O.data() + a, hs);
    }
  };
  auto bare = [&] {
    bare_fwd();
    for (std::size_t i = 0; i < BH; ++i) {
      const std::size_t a = i * T * hs, s = i * T * T;
      blas::gemm(true, false, T, hs, T, 1, P.data() + s, T, pg + a, hs, 1, dv.data() + a, hs);
      blas::gemm(false, true, T, T, hs, 1, pg + a, hs, pv + a, hs, 0, dP.data(), T);
      blas::gemm(false, false, T, hs, T, sc, dP.data(), T, pk + a, hs, 1, dq.data() + a, hs);
      blas::gemm(true, false, T, hs, T, sc, dP.data(), T, pq + a, hs, 1, dk.data() + a, hs);
    }
  };
  row("attention B=32 H=4 T=64 hs=32 causal f+b" + tag, compare([&] {
        q.zero_grad();
        k.zero_grad();
        v.zero_grad();
        attention(q, k, v).backward(seed);
      }, bare), 1.5);
  row("  forward only, NoGrad" + tag, compare([&] {
        NoGrad ng;
        attention(q, k, v);
      }, bare_fwd), 1.5);
}

// 3) attention with Shaw relative keys and values, clip k (R = 2k + 1 buckets; causal pairs use the
// k + 1 (at most T) with distance <= 0), same sizes as 2): vs plain attention, and vs its bare GEMMs:
// the plain ones per block, plus the relative ones over all blocks stacked (B H T, hs) on the used
// buckets: q a^K^T and PB a^V forward; dO a^V^T, PB^T dO, dSB a^K and dSB^T q backward. The rest is
// the softmax and the bucket gather/scatter loops. Targets: the relative GEMMs add nb / T of plain
// attention's GEMM work (k=16: +27%; k=64: +100%, inherent: q a^K^T is as big as q k^T), the loops
// about as much again for k=16; vs bare GEMMs the same 1.5x as plain attention.
void bench_relative(Rng& rng, int clip, double target_vs_plain, const std::string& tag) {
  const std::size_t B = 32, H = 4, T = 64, hs = 32, BH = B * H, R = 2 * clip + 1, rows = BH * T;
  const std::size_t nb = std::min<std::size_t>(clip, T - 1) + 1;  // buckets of distances -min(k, T-1)..0
  Tensor q(random_array({B, H, T, hs}, rng), true), k(random_array({B, H, T, hs}, rng), true),
      v(random_array({B, H, T, hs}, rng), true);
  Tensor ak(random_array({R, hs}, rng, 0.3), true), av(random_array({R, hs}, rng, 0.3), true);
  const Array seed = random_array({B, H, T, hs}, rng);
  auto index = std::make_shared<IndexArray>(IndexArray::shape_type{1, T, T});  // shared by the batch
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j) {
      const int d = int(j) - int(i);
      (*index)(0, i, j) = std::max(-clip, std::min(clip, d)) + clip;
    }
  AttentionOptions rel;
  rel.rel = {index, ak, av};
  Array S(Shape{BH, T, T}), P = xt::ones<real>({BH, T, T}) / real(T), O(Shape{BH, T, hs}), dP(Shape{T, T});
  Array QA(Shape{rows, nb}), PB = xt::ones<real>({rows, nb}), dq = xt::zeros<real>({BH, T, hs}), dk = dq, dv = dq;
  Array dak = xt::zeros<real>({nb, hs}), dav = dak;
  const real sc = real(1) / std::sqrt(real(hs));
  const real *pq = q.data(), *pk = k.data(), *pv = v.data(), *pg = seed.data(), *pak = ak.data(), *pav = av.data();
  auto bare = [&] {
    blas::gemm(false, true, rows, nb, hs, 1, pq, hs, pak, hs, 0, QA.data(), nb);
    for (std::size_t i = 0; i < BH; ++i) {
      const std::size_t a = i * T * hs, s = i * T * T;
      blas::gemm(false, true, T, T, hs, sc, pq + a, hs, pk + a, hs, 0, S.data() + s, T);
      blas::gemm(false, false, T, hs, T, 1, P.data() + s, T, pv + a, hs, 0, O.data() + a, hs);
    }
    blas::gemm(false, false, rows, hs, nb, 1, PB.data(), nb, pav, hs, 1, O.data(), hs);
    blas::gemm(false, true, rows, nb, hs, 1, pg, hs, pav, hs, 0, QA.data(), nb);
    for (std::size_t i = 0; i < BH; ++i) {
      const std::size_t a = i * T * hs, s = i * T * T;
      blas::gemm(true, false, T, hs, T, 1, P.data() + s, T, pg + a, hs, 1, dv.data() + a, hs);
      blas::gemm(false, true, T, T, hs, 1, pg + a, hs, pv + a, hs, 0, dP.data(), T);
      blas::gemm(false, false, T, hs, T, sc, dP.data(), T, pk + a, hs, 1, dq.data() + a, hs);
      blas::gemm(true, false, T, hs, T, sc, dP.data(), T, pq + a, hs, 1, dk.data() + a, hs);
    }
    blas::gemm(true, false, nb, hs, rows, 1, PB.data(), nb, pg, hs, 1, dav.data(), hs);
    blas::gemm(false, false, rows, hs, nb, 1, QA.data(), nb, pak, hs, 1, dq.data(), hs);
    blas::gemm(true, false, nb, hs, rows, 1, QA.data(), nb, pq, hs, 1, dak.data(), hs);
  };
  auto zero = [&] {
    for (Tensor* t : {&q, &k, &v, &ak, &av}) t->zero_grad();
  };
  const std::string name = "shaw k+v, k=" + std::to_string(clip) + " (" + std::to_string(nb) + " buckets)";
  row(name + " f+b vs plain" + tag, compare([&] {
        zero();
        attention(q, k, v, rel).backward(seed);
      }, [&] {
        zero();
        attention(q, k, v).backward(seed);
      }), target_vs_plain);
  row("  same, vs its bare GEMMs" + tag, compare([&] {
        zero();
        attention(q, k, v, rel).backward(seed);
      }, bare), 1.5);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N]\n", argv[0]);
      return 2;
    }
  }
  blas::set_num_threads(threads);
  Rng rng(1);
  std::printf("pelab core benchmark: BLAS threads %d; median of %d alternating runs after %d warm-up\n"
              "tape/bare: steady_clock ms; ratio: of those; cpu ratio: of process CPU times (immune to preemption)\n",
              blas::num_threads(), kReps, kWarmup);
  std::printf("%-58s %8s %8s %8s %8s %7s\n", "case", "tape", "bare", "ratio", "cpu rat", "target");
  // glibc's default malloc hands big blocks (>= 128 KiB, adaptively more) back to the kernel on free,
  // so every step's fresh tensors page-fault again; on VMs a fault is expensive. Measure that first,
  // then with freed memory kept in the heap (what a training process should run with).
  bench_attention(rng, " [default malloc]");
  bench_matmul(rng, " [default malloc]");
  const bool ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  std::printf("-- mallopt(M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 1 GiB): %s\n", ok ? "set" : "FAILED");
  bench_matmul(rng, "");
  bench_attention(rng, "");
  bench_relative(rng, 16, 1.8, "");
  bench_relative(rng, 64, 2.5, "");
  return 0;
}
