// Inverted dropout.
// Kept as an op (docs/architecture.md, the op set): forward and backward multiply by one drawn mask, nothing
// else kept.
#pragma once

#include "core/rng.hpp"
#include "core/tensor.hpp"

namespace pelab {

// In training each element is zeroed with probability p and the rest scaled by 1 / (1 - p), so the
// expectation is unchanged and evaluation needs no rescaling. When !training or p == 0 it returns x
// itself (same handle, nothing recorded). The mask draws one rng.uniform() per element in row-major
// order: the only source of randomness. p outside [0, 1) throws Error.
Tensor dropout(const Tensor& x, real p, Rng& rng, bool training);

}  // namespace pelab
