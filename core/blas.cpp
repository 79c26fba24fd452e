#include "core/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/blas_coretype.hpp"
#include "core/blas_small.hpp"
#include "core/parallel.hpp"
#include "core/shape_only.hpp"

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
char* openblas_get_config(void);
}

namespace pelab::blas {

namespace {
// OpenBLAS starts with one thread per core; pelab cuts products itself (gemm below) and keeps OpenBLAS
// at one thread from the moment this library loads, before any product, whether or not
// parallel::set_threads is ever called.
[[maybe_unused]] const bool kOneThread = (openblas_set_num_threads(1), true);

GemmFn g_serial_for_testing = nullptr;

// The libxsmm path takes float; double (gradient checks) never gets there (gemm_path_from).
[[maybe_unused]] bool small_gemm(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
                                 const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
                                 std::size_t ldc) {
  return detail::small_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
[[maybe_unused]] bool small_gemm(bool, bool, std::size_t, std::size_t, std::size_t, double, const double*, std::size_t,
                                 const double*, std::size_t, double, double*, std::size_t) {
  return false;
}

// B^T for the libxsmm path (float only: double never takes it, gemm_path_from).
[[maybe_unused]] void transpose_b(const float* B, std::size_t N, std::size_t K, std::size_t ldb, float* T) {
  detail::transpose_b(B, N, K, ldb, T);
}
[[maybe_unused]] void transpose_b(const double* B, std::size_t N, std::size_t K, std::size_t ldb, double* T) {
  for (std::size_t i = 0; i < N; ++i)  // not reached; correct if it ever is
    for (std::size_t j = 0; j < K; ++j) T[j * N + i] = B[i * ldb + j];
}

inline CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
inline void gemm_impl(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                      const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm_impl(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha,
                      const double* A, int lda, const double* B, int ldb, double beta, double* C,
                      int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
}  // namespace

void gemm_serial(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                 const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                 std::size_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS leaves C untouched for K = 0 only when beta = 1: make beta explicit
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) C[i * ldc + j] = beta == real(0) ? real(0) : beta * C[i * ldc + j];
    return;
  }
  if (g_serial_for_testing)
    return g_serial_for_testing(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  gemm_kernel(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {
// -1 until the first gemm_path() or set_gemm_path(); then a GemmPath.
std::atomic<int> g_path{-1};
std::atomic<bool> g_path_set{false};  // by set_gemm_path (a run's config), for blas_summary
}  // namespace

GemmPath gemm_path() {
  int p = g_path.load(std::memory_order_relaxed);
  if (p < 0) {
    int unset = -1;
    g_path.compare_exchange_strong(unset, int(default_gemm_path()));
    p = g_path.load(std::memory_order_relaxed);
  }
  return GemmPath(p);
}

GemmPath default_gemm_path() {
  static const GemmPath path = gemm_path_from(std::getenv("PELAB_GEMM"));
  return path;
}

bool gemm_path_available(GemmPath path) {
  return path == GemmPath::openblas || (std::is_same_v<real, float> && detail::small_gemm_built());
}

void set_gemm_path(GemmPath path) {
  g_path.store(int(gemm_path_available(path) ? path : GemmPath::openblas));
  g_path_set = true;
}

const char* gemm_path_key(GemmPath path) { return path == GemmPath::libxsmm ? "libxsmm" : "openblas"; }

GemmPath gemm_path_from(const char* env) {
  // Double (pelab_core_f64, gradient checks only) always runs OpenBLAS: the libxsmm path is float's.
  const bool is_float = std::is_same_v<real, float>, have_small = detail::small_gemm_built();
  const GemmPath libxsmm_or_openblas = gemm_path_available(GemmPath::libxsmm) ? GemmPath::libxsmm : GemmPath::openblas;
  const std::string v = env ? env : "";
  if (v.empty()) return libxsmm_or_openblas;
  if (v == "openblas") return GemmPath::openblas;
  if (v == "libxsmm") {
    if (is_float && !have_small)
      throw Error("environment variable PELAB_GEMM = 'libxsmm': this build has no libxsmm (configured with "
                  "-DPELAB_LIBXSMM=OFF); allowed: openblas, or leave it unset");
    return libxsmm_or_openblas;
  }
  throw Error("environment variable PELAB_GEMM = '" + v + "': allowed values are libxsmm (libxsmm's JIT kernels; " +
              (have_small ? "the default" : "not in this build") + ") and openblas (every GEMM in OpenBLAS" +
              (have_small ? ")" : "; the default)"));
}

std::string gemm_path_name() {
  return gemm_path() == GemmPath::libxsmm ? detail::small_gemm_name() : std::string("OpenBLAS");
}

void gemm_kernel(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                 const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                 std::size_t ldc) {
  if (gemm_path() == GemmPath::libxsmm && small_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
    return;
  gemm_openblas(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_openblas(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                   const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                   std::size_t ldc) {
  gemm_impl(tr(trans_a), tr(trans_b), static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha,
            A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

namespace {
// How gemm cuts a product: along the larger of M and N (`dim`, rows when M >= N), in pieces of at
// least `grain` of it: at most kGemmMaxPieces, each at least kMinPieceDim wide and kMinPieceWork
// multiply-adds (`other` per unit of dim).
struct Cut {
  bool by_rows;
  std::size_t dim, grain;
};
Cut cut_of(std::size_t M, std::size_t N, std::size_t K) {
  const bool by_rows = M >= N;
  const std::size_t dim = by_rows ? M : N, other = (by_rows ? N : M) * K;
  const std::size_t by_count = dim / kGemmMaxPieces;  // then dim / grain < 2 * kGemmMaxPieces
  const std::size_t by_work = other ? (kMinPieceWork + other - 1) / other : dim;
  return {by_rows, dim, std::max({by_count, kMinPieceDim, by_work, std::size_t(1)})};
}
}  // namespace

std::size_t gemm_pieces(std::size_t M, std::size_t N, std::size_t K) {
  const Cut cut = cut_of(M, N, K);
  return parallel::pieces(cut.dim, cut.grain);
}

void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
          const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
          std::size_t ldc) {
  if (shape_only()) return;  // shape-only mode: no kernel (core/shape_only.hpp)
  // gemm_pieces(M, N, K) contiguous pieces, one serial BLAS call each, whatever the thread count
  // (core/parallel.hpp: the plan never depends on it).
  const Cut cut = cut_of(M, N, K);
  const bool by_rows = cut.by_rows;
  // libxsmm's kernels take no transposed B: with several pieces, transpose it once here rather than in
  // each piece (an exact copy: the same bits; a piece libxsmm has no kernel for, not seen with 1.17, then
  // runs OpenBLAS on B^T untransposed). Not under the test hook, which must see the calls as made.
  if (trans_b && N * K > 0 && !g_serial_for_testing && gemm_path() == GemmPath::libxsmm &&
      parallel::pieces(cut.dim, cut.grain) > 1) {
    thread_local std::vector<real> t_bt;  // the caller's: its pieces only read it
    t_bt.resize(N * K);
    transpose_b(B, N, K, ldb, t_bt.data());
    return gemm(trans_a, false, M, N, K, alpha, A, lda, t_bt.data(), N, beta, C, ldc);
  }
  parallel::for_range(cut.dim, cut.grain, [&](std::size_t, std::size_t b, std::size_t e) {
    if (by_rows)  // rows [b, e) of C and of op(A)
      gemm_serial(trans_a, trans_b, e - b, N, K, alpha, trans_a ? A + b : A + b * lda, lda, B, ldb, beta,
                  C + b * ldc, ldc);
    else  // columns [b, e) of C and of op(B)
      gemm_serial(trans_a, trans_b, M, e - b, K, alpha, A, lda, trans_b ? B + b * ldb : B + b, ldb, beta,
                  C + b, ldc);
  });
}

real gemm_defer_alpha(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                      const real* A, std::size_t lda, const real* B, std::size_t ldb, real* C, std::size_t ldc) {
  // gemm's plan makes one piece of this shape, and that piece is gemm_serial -> gemm_kernel -> small_gemm,
  // which for alpha != 1 and beta 0 runs exactly this call and then scales C (blas_small.cpp).
  if (alpha != real(1) && M > 0 && N > 0 && K > 0 && !shape_only() && !g_serial_for_testing &&
      gemm_path() == GemmPath::libxsmm && gemm_pieces(M, N, K) == 1 &&
      small_gemm(trans_a, trans_b, M, N, K, real(1), A, lda, B, ldb, real(0), C, ldc))
    return alpha;
  gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, real(0), C, ldc);
  return real(1);
}

void gemm_reference(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                    const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                    std::size_t ldc) {
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double acc = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const double a = trans_a ? A[k * lda + i] : A[i * lda + k];
        const double b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
      }
      real& c = C[i * ldc + j];
      c = static_cast<real>(alpha * acc + (beta == real(0) ? 0.0 : double(beta) * c));
    }
}

void set_serial_gemm_for_testing(GemmFn fn) { g_serial_for_testing = fn; }

void set_num_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
int num_threads() { return openblas_get_num_threads(); }

std::string core_name() {
  const char* n = openblas_get_corename();
  return n ? n : "unknown";
}

std::string library_config() {
  const char* c = openblas_get_config();
  return c ? c : "unknown";
}

namespace {

// Deterministic values in [-1, 1) (a fixed LCG: the check must not depend on a seed elsewhere).
void fill(std::vector<real>& v, std::uint64_t seed) {
  for (auto& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<real>(static_cast<double>(seed >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
}

}  // namespace

void check_gemm_agrees(GemmFn under_test) {
  struct Size { std::size_t M, N, K; };
  // Small enough for OpenBLAS's small-matrix kernels, and large enough for its blocked ones (several panels).
  const Size sizes[] = {{17, 13, 29}, {70, 90, 150}};
  const real eps = std::numeric_limits<real>::epsilon();
  for (const Size& s : sizes)
    for (int t = 0; t < 4; ++t)
      for (const real beta : {real(0), real(0.5)}) {
        const bool ta = t & 1, tb = t & 2;
        const std::size_t lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 2, ldc = s.N + 5;
        std::vector<real> A((ta ? s.K : s.M) * lda), B((tb ? s.N : s.K) * ldb), C(s.M * ldc), ref;
        fill(A, 1 + t);
        fill(B, 11 + t);
        fill(C, 21 + t);
        ref = C;
        const real alpha = real(0.75);
        under_test(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
        gemm_reference(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, ref.data(), ldc);
        for (std::size_t i = 0; i < s.M; ++i)
          for (std::size_t j = 0; j < ldc; ++j) {
            if (j >= s.N) {  // past the row's end: must stay untouched
              if (C[i * ldc + j] != ref[i * ldc + j])
                throw std::runtime_error("the BLAS GEMM (kernel " + core_name() + ") wrote past the end of a row "
                                         "of C; choose another kernel with OPENBLAS_CORETYPE (e.g. Haswell)");
              continue;
            }
            // Rounding bound of a K-term dot product: |alpha| sum |a||b| + |beta c| times (K + 2) eps, doubled.
            double mag = 0;
            for (std::size_t k = 0; k < s.K; ++k)
              mag += std::fabs(double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]));
            const double bound = 2.0 * double(s.K + 2) * double(eps) * (double(alpha) * mag + double(beta));  // |C| < 1
            const double got = C[i * ldc + j], want = ref[i * ldc + j];
            if (!(std::fabs(got - want) <= bound)) {
              char msg[512];
              std::snprintf(msg, sizeof msg,
                            "the BLAS GEMM (%s, kernel %s) disagrees with the reference: element (%zu, %zu) of a "
                            "%zux%zux%zu product (trans_a %d, trans_b %d, beta %g) is %.9g, expected %.9g (bound "
                            "%.3g); choose another kernel with OPENBLAS_CORETYPE (e.g. Haswell) and rerun",
                            library_config().c_str(), core_name().c_str(), i, j, s.M, s.N, s.K, int(ta), int(tb),
                            double(beta), got, want, bound);
              throw std::runtime_error(msg);  // not bad input: exit status 1
            }
          }
      }
}

double measure_peak_gflops(double seconds) {
  const std::size_t n = 512;
  std::vector<real> A(n * n), B(n * n), C(n * n);
  fill(A, 3);
  fill(B, 5);
  const int saved = num_threads();
  set_num_threads(1);
  using clock = std::chrono::steady_clock;
  double best = 1e30, spent = 0;
  for (int r = 0; r < 1000 && (r < 4 || spent < seconds); ++r) {
    const auto t0 = clock::now();
    gemm_openblas(false, false, n, n, n, 1, A.data(), n, B.data(), n, 0, C.data(), n);
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    spent += dt;
    if (r > 0) best = std::min(best, dt);  // the first product warms caches and OpenBLAS's buffers
  }
  set_num_threads(saved);
  return 2.0 * double(n) * n * n / best / 1e9;
}

std::string blas_summary() {
  static const std::vector<std::string> base = [] {
    const double peak = measure_peak_gflops();
    std::istringstream cfg(library_config());
    std::string name, version;
    cfg >> name >> version;
    char buf[96];
    std::snprintf(buf, sizeof buf, "; OpenBLAS %s peak %.1f GFLOP/s (1 thread, 512^3)",
                  sizeof(real) == sizeof(float) ? "sgemm" : "dgemm", peak);
    return std::vector<std::string>{name + " " + version + ", kernel " + core_name() + " (" + coretype_origin() + ")",
                                    buf};
  }();
  static std::atomic<bool> checked[2] = {false, false};  // per GemmPath: the agreement check runs once for each
  const GemmPath path = gemm_path();
  if (!checked[int(path)].load()) {
    check_gemm_agrees();
    checked[int(path)].store(true);
  }
  const char* env = std::getenv("PELAB_GEMM");
  const std::string why = g_path_set ? "the run's [train] gemm" : env && *env ? "PELAB_GEMM" : "the default";
  return base[0] + "; GEMMs by " + gemm_path_name() + " (" + why + "); gemm agrees with the reference" + base[1];
}

}  // namespace pelab::blas
