// Fused softmax cross-entropy with an optional per-token weight mask.
// Kept as an op (docs/architecture.md, the op set): keeps one log-sum-exp per row, not (N, V) probabilities.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// Mean negative log-likelihood over the counted tokens, as a 0-d tensor:
//   loss = sum_t w_t * (logsumexp(logits_t) - logits_t[target_t]) / sum_t w_t
// logits (..., V); targets (...) (logits' shape without the last axis), int32 class ids;
// mask (...) or nullptr: a weight per token, normally 0/1, every weight >= 0. Without a mask every
// token has weight 1. If sum(w) == 0 the loss is 0 and the gradient is zero (not NaN).
// Tokens of weight 0 are skipped entirely: their target (e.g. -1 padding) and logits are not read,
// and their logits get exactly zero gradient.
// Fused: forward keeps one log-sum-exp per row; backward recomputes p = softmax(logits) and
// accumulates dlogits = (p - onehot(target)) * w / sum(w) * g.
// Throws Error on shape mismatches, negative or non-finite weights, and on a counted token whose
// target id is outside [0, V).
Tensor cross_entropy(const Tensor& logits, const IndexArray& targets, const Array* mask = nullptr);

}  // namespace pelab
