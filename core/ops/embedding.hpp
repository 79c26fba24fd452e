// Embedding lookup (row gather) with a scatter-add backward.
// Kept as an op (docs/architecture.md, the op set): a gather, which no composite of the others gives.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// table (V, D), ids of any shape (...) -> (..., D): out[..., :] = table[ids[...], :].
// Backward scatter-adds into the rows that were used (repeated ids accumulate); other rows get zero.
// An id outside [0, V) throws Error naming the id, its flat position in ids and V.
Tensor embedding(const Tensor& table, const IndexArray& ids);

}  // namespace pelab
