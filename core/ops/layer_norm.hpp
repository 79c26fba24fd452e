// Fused layer normalization over the last axis.
// Kept as an op (docs/architecture.md, the op set): saves the per-row mean and rstd only, as llm.c.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis, with the biased variance
// (as PyTorch). x (..., C), gamma (C,), beta (C,) or undefined (no bias); eps >= 0.
// Forward saves the per-row mean and rstd = 1 / sqrt(var + eps); backward gives dx, dgamma and
// dbeta in one pass over the rows.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, real eps = real(1e-5));

}  // namespace pelab
