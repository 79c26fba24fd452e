// Core speed benchmark: the tape's overhead over bare BLAS for the two hot paths.
//   1) matmul forward + backward through the tape vs its three bare GEMMs (forward, dA, dB).
//   2) the fused attention core forward + backward vs its bare per-(batch, head) GEMMs.
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
  return 0;
}
