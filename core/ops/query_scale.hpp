// Per-head and per-query-row scales on q: attention temperature and log-length scaling
// (layers/attention_scaling.hpp). Scaling q row i by c multiplies the logits of query i by c, so
// the attention's own per-head scale (1/sqrt(hs), or an encoding's) is left alone.
// Kept as an op (docs/architecture.md, the op set): a learned head scale without (B, H, T, hs) intermediates.
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// q (B, H, T, hs) -> out[b, h, t, :] = q[b, h, t, :] * head[h] * rows[t].
// head: (H) or undefined (1); it may require grad (a learned temperature). rows: T constants shared by
// every batch row and head, or null (1); shared with the tape, not copied. Backward: dq += g * head[h] *
// rows[t]; dhead[h] += sum over b, t, d of g * q * rows[t].
Tensor scale_queries(const Tensor& q, const Tensor& head, std::shared_ptr<const std::vector<real>> rows);

}  // namespace pelab
