// The small-matrix path of the one BLAS wrapper (core/blas.hpp): libxsmm's JIT-generated kernels
// (Debian libxsmm-dev 1.17; https://github.com/libxsmm/libxsmm), which code each product's exact
// shape for the CPU's widest vectors (AVX-512 on this Zen 5: about twice the AVX2 OpenBLAS kernel on
// pelab's shapes, bench/README.md "GEMM shapes"). <libxsmm.h> is included here only.
//
// libxsmm is column-major; a row-major C (M, N) = op(A) op(B) is the column-major C^T (N, M) = op(B)^T
// op(A)^T with the same storage: m = N, n = M, k = K, libxsmm's "A" is our B and its "B" our A. Its
// JIT kernels take alpha = 1, beta 0 or 1 and no transposed "A" (our trans_b), so:
//  - trans_b: B (N, K) is transposed into (K, N) first (transpose_b below; blas::gemm does it once for
//    all pieces of a product, a piece called directly into per-thread scratch);
//  - another alpha with beta 0: the product goes to C, then C *= alpha; another alpha or beta otherwise:
//    the product goes to scratch with beta 0, then C = alpha T + beta C;
//  - large products are cut into blocks (kBlockM rows, kBlockN columns, kBlockK of the inner
//    dimension, beta 1 after the first K block) so that a block of B stays in cache.
// Every choice depends on the shape alone (never on the thread count), and a block is one kernel call
// on the calling thread, so results are the same bits at any thread count; the kernel itself depends on
// the CPU (libxsmm_get_target_arch), as OpenBLAS's does.
#include "core/blas_small.hpp"
#include "core/simd.hpp"

#ifdef PELAB_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include <algorithm>
#include <vector>

namespace pelab::blas::detail {

#ifdef PELAB_HAVE_LIBXSMM
namespace {

constexpr std::size_t kBlockM = 256, kBlockN = 256, kBlockK = 256;

struct Init {
  Init() { libxsmm_init(); }
};

// C block (m_rows, n_cols) += / = op(A) op(B) over k inner, alpha 1, beta 0 or 1; B not transposed.
// False when libxsmm has no kernel for the shape (then nothing was written).
bool kernel_call(bool ta, std::size_t m_rows, std::size_t n_cols, std::size_t k, const float* A, std::size_t lda,
                 const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc) {
  const libxsmm_blasint m = libxsmm_blasint(n_cols), n = libxsmm_blasint(m_rows), kk = libxsmm_blasint(k);
  const libxsmm_blasint la = libxsmm_blasint(ldb), lb = libxsmm_blasint(lda), lc = libxsmm_blasint(ldc);
  const float alpha = 1;
  const int flags = ta ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  // The last kernel this thread dispatched, keyed by every argument of the dispatch: attention's per-(row,
  // head) products call one shape B H times in a row, and libxsmm's dispatch (descriptor, hash, registry
  // lookup) was about 0.7% of a (d) step (bench/README.md, "Profiles of (d) and zhou2024"). The kernel
  // called is the one the dispatch returns either way (libxsmm keeps its kernels for the process's life),
  // so no result changes.
  struct Last {
    libxsmm_blasint m = -1, n = -1, k = -1, la = -1, lb = -1, lc = -1;
    float beta = -1;
    int flags = -1;
    libxsmm_smmfunction f = nullptr;
  };
  thread_local Last last;
  const bool hit = last.m == m && last.n == n && last.k == kk && last.la == la && last.lb == lb && last.lc == lc &&
                   last.beta == beta && last.flags == flags;
  const libxsmm_smmfunction f =
      hit ? last.f : libxsmm_smmdispatch(m, n, kk, &la, &lb, &lc, &alpha, &beta, &flags, nullptr);
  if (!hit) last = Last{m, n, kk, la, lb, lc, beta, flags, f};
  if (!f) return false;
  f(B, A, C);
  return true;
}

// C (M, N) = op(A) op(B) (beta 0) or += (beta 1), B not transposed, in blocks.
bool blocked(bool ta, std::size_t M, std::size_t N, std::size_t K, const float* A, std::size_t lda, const float* B,
             std::size_t ldb, float beta, float* C, std::size_t ldc) {
  for (std::size_t j = 0; j < N; j += kBlockN)
    for (std::size_t p = 0; p < K; p += kBlockK)
      for (std::size_t i = 0; i < M; i += kBlockM) {
        const std::size_t nb = std::min(kBlockN, N - j), kb = std::min(kBlockK, K - p), mb = std::min(kBlockM, M - i);
        const float* a = ta ? A + p * lda + i : A + i * lda + p;  // op(A) rows i.., columns p..
        const float b0 = p == 0 ? beta : 1.0f;
        if (!kernel_call(ta, mb, nb, kb, a, lda, B + p * ldb + j, ldb, b0, C + i * ldc + j, ldc)) {
          if (i == 0 && j == 0 && p == 0) return false;  // nothing written yet: the caller falls back
          // A later block's shape without a kernel after earlier blocks ran: not seen with libxsmm 1.17
          // (it codes every shape), but finish the block by the reference loop rather than fail.
          for (std::size_t r = 0; r < mb; ++r)
            for (std::size_t c = 0; c < nb; ++c) {
              float acc = b0 == 0.0f ? 0.0f : C[(i + r) * ldc + j + c];
              for (std::size_t q = 0; q < kb; ++q)
                acc += a[ta ? q * lda + r : r * lda + q] * B[(p + q) * ldb + j + c];
              C[(i + r) * ldc + j + c] = acc;
            }
        }
      }
  return true;
}

thread_local std::vector<float> t_bt, t_prod;

// T (K, N) = B^T for B (N, K), in 16 x 16 tiles (both sides' cache lines used whole). Against
// libxsmm_otrans (one thread, this Zen 5, 2026-11-26): (N, K) = (1024, 256) 62 us against 269, (512, 128)
// 13 against 46, (256, 64) 3.3 against 5.4, (128, 128) 3.2 against 4.2; but otrans wins for few rows of T
// or a short N: (64, 256) 1.9 against 3.3, (192, 64) 0.7 against 2.5, (64, 32) 0.12 against 0.40.
PELAB_HOT
void transpose_tiles(const float* B, std::size_t N, std::size_t K, std::size_t ldb, float* T) {
  constexpr std::size_t kTile = 16;
  for (std::size_t i0 = 0; i0 < N; i0 += kTile)
    for (std::size_t j0 = 0; j0 < K; j0 += kTile) {
      const std::size_t i1 = std::min(i0 + kTile, N), j1 = std::min(j0 + kTile, K);
      if (i1 - i0 == kTile && j1 - j0 == kTile) {  // fixed trip counts: vectorized
        for (std::size_t j = 0; j < kTile; ++j)
          for (std::size_t i = 0; i < kTile; ++i) T[(j0 + j) * N + i0 + i] = B[(i0 + i) * ldb + j0 + j];
      } else {
        for (std::size_t j = j0; j < j1; ++j)
          for (std::size_t i = i0; i < i1; ++i) T[j * N + i] = B[i * ldb + j];
      }
    }
}

// C (M, N) *= alpha, row by row: a product then a rounding by alpha, the same bits at any vector width.
PELAB_HOT
void scale_rows(float* C, std::size_t ldc, std::size_t M, std::size_t N, float alpha) {
  for (std::size_t i = 0; i < M; ++i) {
    float* __restrict c = C + i * ldc;
    for (std::size_t j = 0; j < N; ++j) c[j] *= alpha;
  }
}

// libxsmm 1.17's JIT kernels return with the upper halves of the vector registers in use (no vzeroupper),
// and every SSE instruction after them then pays for it: the portable build's loops are SSE
// (-march=x86-64-v2), and at (a) with CoPE, whose step is 80% such loops, the step took 17.0 ms of CPU
// without this against 12.6 ms with it (14.0 ms with OpenBLAS, which clears them). On a CPU without
// AVX libxsmm's kernels are SSE and there is nothing to clear.
#if defined(__x86_64__) || defined(__i386__)
const bool kHaveAvx = __builtin_cpu_supports("avx");
inline void clear_upper_state() {
  if (kHaveAvx) __asm__ volatile("vzeroupper" ::: "memory");
}
#else
inline void clear_upper_state() {}
#endif  // per-thread scratch: transposed B, a product before scaling

}  // namespace

void transpose_b(const float* B, std::size_t N, std::size_t K, std::size_t ldb, float* T) {
  static const Init init;
  if (N >= 256 || (N >= 128 && K >= 128))  // where the tiles measured faster (transpose_tiles)
    transpose_tiles(B, N, K, ldb, T);
  else
    libxsmm_otrans(T, B, sizeof(float), libxsmm_blasint(K), libxsmm_blasint(N), libxsmm_blasint(ldb),
                   libxsmm_blasint(N));
}

bool small_gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha, const float* A,
                std::size_t lda, const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc) {
  static const Init init;
  if (trans_b) {  // B stored (N, K): its transpose (K, N), rows of N
    t_bt.resize(K * N);
    transpose_b(B, N, K, ldb, t_bt.data());
    B = t_bt.data(), ldb = N;
  }
  if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
    const bool ok = blocked(trans_a, M, N, K, A, lda, B, ldb, beta, C, ldc);
    clear_upper_state();
    return ok;
  }
  if (beta == 0.0f) {  // the scores' q k^T / sqrt(hs): the product into C, then scaled there (no scratch)
    const bool ok = blocked(trans_a, M, N, K, A, lda, B, ldb, 0.0f, C, ldc);
    clear_upper_state();
    if (ok) scale_rows(C, ldc, M, N, alpha);
    return ok;
  }
  t_prod.resize(M * N);
  const bool ok = blocked(trans_a, M, N, K, A, lda, B, ldb, 0.0f, t_prod.data(), N);
  clear_upper_state();
  if (!ok) return false;
  for (std::size_t i = 0; i < M; ++i) {
    const float* t = t_prod.data() + i * N;
    float* c = C + i * ldc;
    for (std::size_t j = 0; j < N; ++j) c[j] = alpha * t[j] + beta * c[j];
  }
  return true;
}

bool small_gemm_built() { return true; }

std::string small_gemm_name() {
  static const Init init;
  return std::string("libxsmm ") + LIBXSMM_CONFIG_VERSION + " (JIT, target " + libxsmm_get_target_arch() + ")";
}

#else  // built without libxsmm (-DPELAB_LIBXSMM=OFF)

bool small_gemm(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t, const float*,
                std::size_t, float, float*, std::size_t) {
  return false;
}
bool small_gemm_built() { return false; }
void transpose_b(const float* B, std::size_t N, std::size_t K, std::size_t ldb, float* T) {  // not reached
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < K; ++j) T[j * N + i] = B[i * ldb + j];
}
std::string small_gemm_name() { return ""; }

#endif

}  // namespace pelab::blas::detail
