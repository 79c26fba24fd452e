// The one BLAS wrapper. Row-major GEMM on raw storage; <cblas.h> is included only in blas.cpp
// because it clashes with xtensor-blas headers in one translation unit.
#pragma once

#include <cstddef>

#include "core/tensor.hpp"

namespace pelab::blas {

// C (M x N) = alpha * op(A) * op(B) + beta * C, all row-major with leading dimensions.
// op(A) is M x K (A stored K x M when trans_a), op(B) is K x N (B stored N x K when trans_b).
// beta = 1 accumulates, which is how backward adds into existing gradients.
void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
          const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
          std::size_t ldc);

// Naive triple loop with the same contract: the reference the GEMM tests compare against.
void gemm_reference(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                    const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                    std::size_t ldc);

// OpenBLAS threads. pelab sets this explicitly (1 by default: fastest at toy sizes).
void set_num_threads(int n);
int num_threads();

}  // namespace pelab::blas
