// linear's argument checks and backward, shared by linear and linear_gelu (internal to core/ops).
#pragma once

#include "core/tape.hpp"

namespace pelab::detail {

struct LinearDims {
  std::size_t in = 0, out = 0, rows = 0;  // x viewed as (rows, in); y (rows, out)
  Shape out_shape;
};
// Checks x (..., in), w (out, in), bias (out,) or undefined; throws Error naming `op` otherwise.
LinearDims linear_dims(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias);

// Backward of y = x w^T + bias given g = dL/dy (rows, out): dx and dw by GEMM (written when fresh),
// db by column sums in row order. Inputs 0, 1, 2 are x, w, bias; saved 0, 1 are x and w.
void linear_backward(const BackwardCtx& c, const real* g, std::size_t rows, std::size_t in, std::size_t out_f);

}  // namespace pelab::detail
