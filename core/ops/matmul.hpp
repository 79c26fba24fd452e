// Matrix products through cblas_sgemm on raw storage.
// Kept as ops (docs/architecture.md, the op set): the GEMMs; linear_gelu keeps GELU's derivative instead of a
// pre-activation.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// C = op(A) op(B). A is (..., M, K), or (..., K, M) with trans_a; B is (K, N), or (N, K) with
// trans_b, either 2-D (shared by every batch) or with the same leading batch dims as A.
// 2-D B with untransposed A runs as one GEMM over the flattened batch.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// y = x w^T + bias: x (..., in), w (out, in), bias (out,) or undefined. One GEMM forward, two
// GEMMs and a row sum backward.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());

// gelu(linear(x, w, bias)) (exact, erf GELU) as one op: the bias is added and GELU applied in one pass
// over the GEMM's output, which also stores GELU's derivative for backward (instead of the
// pre-activation, the same memory); backward multiplies it into the incoming gradient and sums the
// bias gradient in the same pass. Same values as the two ops (tests/core/test_linear_gelu.cpp).
Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());

}  // namespace pelab
