#include "core/blas.hpp"

#include <cblas.h>

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
}

namespace pelab::blas {

namespace {
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

void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
          const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
          std::size_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS leaves C untouched for K = 0 only when beta = 1: make beta explicit
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) C[i * ldc + j] = beta == real(0) ? real(0) : beta * C[i * ldc + j];
    return;
  }
  gemm_impl(tr(trans_a), tr(trans_b), static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha,
            A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
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

void set_num_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
int num_threads() { return openblas_get_num_threads(); }

}  // namespace pelab::blas
