// Gather with linear interpolation along the last axis (CoPE: fractional positions index learned
// position logits).
// Kept as an op (docs/architecture.md, the op set): a gather, which no composite of the others gives.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// z (..., P), p (..., N) with the same leading dims (...) -> (..., N). p is clamped to [0, P - 1],
// then with i0 = floor(p), i1 = min(i0 + 1, P - 1), f = p - i0:
//   out = (1 - f) z[i0] + f z[i1].
// So p < 0 gives z[0], p > P - 1 gives z[P - 1], an integer p = m gives z[m], and a nan p gives nan.
// Gradients: z[i0] += (1 - f) g, z[i1] += f g; p += (z[i1] - z[i0]) g for 0 <= p <= P - 1 (at an
// integer m < P - 1 that is the right-hand slope z[m+1] - z[m]; at P - 1 it is 0), 0 where p was
// clamped, nan for a nan p. P must be > 0; shape mismatches throw Error naming "interp_gather".
Tensor interp_gather(const Tensor& z, const Tensor& p);

}  // namespace pelab
