// softmax / log_softmax over the last axis, numerically stable (the row max is subtracted first).
// Kept as ops (docs/architecture.md, the op set): stable in one pass, which log(softmax(x)) is not.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// y = exp(x - max) / sum exp(x - max) per row of the last axis. x (..., C) -> (..., C).
// -inf entries get probability 0; a row that is entirely -inf gives NaN (as PyTorch).
// Backward: dx = y * (g - sum(g * y)).
Tensor softmax(const Tensor& x);

// y = x - max - log sum exp(x - max) per row of the last axis. x (..., C) -> (..., C).
// Backward: dx = g - softmax(x) * sum(g), with softmax(x) = exp(y).
Tensor log_softmax(const Tensor& x);

}  // namespace pelab
