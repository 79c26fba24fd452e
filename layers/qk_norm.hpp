// QK-norm: q and k RMS-normalized over each head's hs dimensions, times a learned gain per dimension
// (shared by the heads), before the encoding rotates them, as Qwen3, OLMo 2 and Gemma 3 order it
// (q_norm / k_norm of head_dim, then apply_rotary_pos_emb):
//   qk_norm(x)[d] = x[d] / sqrt(mean over hs of x^2 + eps) * g[d],  eps = [model] ln_eps, g = 1 at init.
// Llama 4 (meta-llama/llama-models, models/llama4/model.py, Attention.forward) normalizes after the rotation
// and without a gain (rmsnorm(xq, norm_eps), norm_eps 1e-5): a rotation keeps each head's RMS, so with g = 1
// (pelab's init) both orders give the same q and k; they part once g is learned. Per layer ([attention]
// qk_norm: "on", "off", or a pattern repeated over the layers, "on,on,on,off" as Llama 4 drops it on its
// NoPE layers). Parameters blocks.<i>.attn.q_norm.weight, k_norm.weight (hs), not decayed.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// Whether each of n_layers layers normalizes q and k; throws Error naming attention.qk_norm when an item is
// not on/off or the pattern's length does not divide n_layers.
std::vector<bool> layer_qk_norms(const std::string& pattern, std::size_t n_layers);

// x (B, H, T, hs) RMS-normalized over its last axis, times gain (hs).
Tensor rms_norm_last(const Tensor& x, const Tensor& gain, real eps);

}  // namespace pelab
