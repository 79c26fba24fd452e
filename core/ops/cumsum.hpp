// Cumulative sum along one axis (CoPE counts positions with a reversed one).
// Kept as an op (docs/architecture.md, the op set): no composite of the other ops scans.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// out[..., t, ...] = sum of x[..., s, ...] over s <= t, or over s >= t with reverse (PyTorch's
// x.flip(a).cumsum(a).flip(a), summed in the same order). Same shape as x; negative axes count from
// the end. Backward: the cumulative sum of the gradient in the opposite direction.
Tensor cumsum(const Tensor& x, int axis, bool reverse = false);

}  // namespace pelab
