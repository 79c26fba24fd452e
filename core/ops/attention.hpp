// Fused scaled-dot-product attention core: per-(batch, head) GEMMs with the softmax in between.
#pragma once

#include <vector>

#include "core/tensor.hpp"

namespace pelab {

struct AttentionOptions {
  bool causal = true;
  Tensor bias;                    // optional additive logit bias (H or 1, Tq, Tk); may require grad
  real scale = real(-1);          // logit scale; < 0 means default 1/sqrt(hs)
  std::vector<real> head_scale;   // optional per-head scales (size H); overrides `scale` when non-empty
  Array* probs_out = nullptr;     // optional: receives the attention probabilities (B, H, Tq, Tk) (for plots)
};

// q (B, H, Tq, hs), k and v (B, H, Tk, hs) -> (B, H, Tq, hs).
// logits = scale_h * q k^T + bias[h]; causal: query i sees keys j <= i + (Tk - Tq) (others get probability 0);
// softmax over keys; out = P v. Backward gives q, k, v and bias (summed over the batch, and over
// heads for a (1, Tq, Tk) bias). In the float build, probabilities below e^-86 times the row's
// largest are exactly 0 (a vectorized exp; no denormals). Shape mismatches (and causal with
// Tq > Tk, which would leave rows empty) throw Error naming "attention".
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt = {});

}  // namespace pelab
