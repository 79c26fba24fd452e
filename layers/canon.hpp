// Canon layers (Allen-Zhu, "Physics of Language Models: Part 4.1, Architecture Design and the Magic of
// Canon Layers", arXiv:2512.17351; the authors' code: facebookresearch/PhysicsLM4, huggingface/canon_helper.py
// and modeling_llama_canon.py): a causal depthwise convolution along time with a residual,
//   canon(x)[t] = x[t] + sum over s = 0..K-1 of w[c, s] x[t - (K - 1 - s)]   (x = 0 before t = 0),
// K = 4 by default, no bias, no activation (the authors' defaults: canon_kernel 4, canon_bias False,
// canon_activation False, canon_residual True), the weights initialized as torch's Conv1d default,
// uniform(-1/sqrt(K), 1/sqrt(K)) (std 0.29 at K = 4), under every [model] init scheme: the authors warn
// that a 0.02 init is unwise. At up to four points of a block ([canon] points, a subset of "ABCD"):
//   A  on ln1's output, before the attention (blocks.<i>.canon_a.weight, (C, 1, K))
//   B  on the packed q, k, v projection (B, T, 3C), before QK-norm and the encoding (blocks.<i>.attn.canon_b.weight)
//   C  on ln2's output, before the MLP (blocks.<i>.canon_c.weight)
//   D  on the MLP's hidden pre-activation (B, T, F), before the activation (blocks.<i>.canon_d.weight); the
//      authors' gated MLP convolves gate and up projections together, pelab's MLP has the one projection.
// The convolution is the op PaTH uses (core/ops/causal_conv.hpp). It is one-sided in every model: with
// [model] causal = false (bidirectional attention) each token still mixes in its K - 1 predecessors only.
#pragma once

#include <string>

#include "layers/module.hpp"

namespace pelab {

// [canon] in configs.
struct CanonSettings {
  std::string points;       // a subset of "ABCD" ("" = no Canon layer)
  std::size_t kernel = 4;   // taps K, the current token included
  bool residual = true;     // x + conv(x); false: conv(x) alone
  bool has(char point) const { return points.find(point) != std::string::npos; }
};

// Throws Error naming canon.points / canon.kernel when they are not a subset of ABCD (each once) / >= 1.
void check_canon_settings(const CanonSettings& s);

class Canon : public Module {
 public:
  Canon(std::size_t channels, std::size_t kernel, bool residual);
  // x (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x) const;
  Tensor weight;  // (C, 1, K): torch's Conv1d(C, C, K, groups=C) weight
  bool residual;
};

}  // namespace pelab
