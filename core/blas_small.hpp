// The small-matrix GEMM path behind core/blas.hpp (libxsmm; core/blas_small.cpp). Not for direct use:
// blas::gemm chooses it (blas::gemm_path()).
#pragma once

#include <cstddef>
#include <string>

namespace pelab::blas::detail {

// gemm_serial's contract, in float, on the calling thread. False when this path has no kernel for the
// shape or pelab was built without libxsmm; C is then untouched and the caller uses OpenBLAS.
bool small_gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha, const float* A,
                std::size_t lda, const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc);

// T (K, N) = B^T for B (N, K) with row stride ldb: the transposition small_gemm makes for trans_b
// (exact copies: which code transposes never changes a result).
void transpose_b(const float* B, std::size_t N, std::size_t K, std::size_t ldb, float* T);

// Whether this build has the path (-DPELAB_LIBXSMM=ON), without starting libxsmm.
bool small_gemm_built();

// "libxsmm 1.17 (JIT, target skx)"; "" when built without it.
std::string small_gemm_name();

}  // namespace pelab::blas::detail
