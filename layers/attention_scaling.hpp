// Attention temperature and log-length scaling, for every encoding ([attention] in configs). Each
// multiplies the logits of a query on top of the attention's own scale 1/sqrt(hs) by scaling q after
// the encoding has rotated it and built its bias:
//   none        1
//   fixed       1 / temperature
//   log_length  log(n) / log(L) / temperature, n the number of keys the query sees (1-based: query row
//               t of a causal model sees n = t + 1 keys, of a bidirectional one n = T), L the training
//               sequence length in tokens ([attention] log_length_base, 0 = that). With clamp (the
//               default) max(1, log n / log L), as Qwen's "logn attention": unchanged inside the training
//               length, sharper beyond it; without, the plain ratio of Chiang & Cholak 2022 / Su 2021
//               (entropy invariance), which also flattens short prefixes.
//   learned     exp(w_h) per layer and head, w initialized to -ln(temperature) (parameter
//               blocks.<i>.attn.log_scale, not decayed).
//   ssmax       Scalable-Softmax (Nakanishi 2025, arXiv:2501.19399): s_h log(n) per layer and head, s
//               learned (parameter blocks.<i>.attn.ssmax_s, not decayed), initialized to 1 / (log L
//               temperature) so that a query that sees L keys starts at 1/temperature; n counts the keys the
//               query sees (within the layer's window). It is log_length without the clamp, with s learned.
// n counts keys, not position ids: the argument (keep the attention entropy from growing like log n)
// is about how many keys compete. Additive biases (ALiBi, T5, Kerple, FIRE, CoPE) are not scaled:
// the scale applies to q.k (and Shaw's q.a^K). none, fixed and log_length have no parameters, so
// `pelab eval --set attention.scaling=log_length` applies them to a model trained without.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

struct AttentionScalingSettings {
  std::string scaling = "none";  // none | fixed | log_length | learned
  double temperature = 1;
  bool log_length_clamp = true;
  std::size_t log_length_base = 0;  // L; 0 = the training sequence length
  // Sliding-window attention per layer: "0" (every layer sees every earlier key), "64", or a pattern
  // repeated over the layers, "0,64" (layer 0 full, layer 1 its 64 nearest keys, layer 2 full, ...).
  std::string window = "0";
  // Chunked local attention per layer (Llama 4's iRoPE): "none", "8192", or a pattern repeated over the
  // layers, "8,8,8,none": the tokens of rows [kC, (k+1)C) attend causally within their chunk only. A
  // chunk of 0 is refused (write none); one longer than the sequence is plain causal attention.
  std::string chunk = "none";
  // Llama 4's attention temperature tuning (meta-llama/llama-models models/llama4/model.py, applied there
  // on the NoPE layers): in the layers a pattern marks 1 ("0,0,0,1"), q of token index t is multiplied by
  //   log(floor((t + 1) / tuning_floor_scale) + 1) * tuning_attn_scale + 1
  // (1 for t + 1 < floor_scale), after the encoding and [attention] scaling; at evaluation only unless
  // tuning_in_training. t is the token's row in the sequence, not its position id, as Meta's.
  std::string temperature_tuning = "0";
  double tuning_floor_scale = 8192;  // Meta's floor_scale
  double tuning_attn_scale = 0.1;    // Meta's attn_scale
  bool tuning_in_training = false;
};

// The window of each of n_layers layers (0: none); throws Error naming attention.window when the pattern
// is not comma-separated non-negative integers or its length does not divide n_layers.
std::vector<std::size_t> layer_windows(const std::string& pattern, std::size_t n_layers);

// The chunk of each layer (0: none); Error naming attention.chunk for a 0, a malformed item or a
// pattern whose length does not divide n_layers.
std::vector<std::size_t> layer_chunks(const std::string& pattern, std::size_t n_layers);
// Whether each layer applies temperature tuning; Error naming attention.temperature_tuning unless the
// items are 0 or 1 and their count divides n_layers.
std::vector<bool> layer_tuning(const std::string& pattern, std::size_t n_layers);

// The keys query row t of T sees: t + 1 when causal (at most `window` of them when window > 0, only its
// chunk's when chunk > 0), else T.
std::size_t visible_keys(std::size_t t, std::size_t T, bool causal, std::size_t window, std::size_t chunk = 0);

// Temperature tuning's multiplier of q at token index t (formula above).
double tuning_scale(std::size_t t, double floor_scale, double attn_scale);
// The T rows' multipliers, or null when every one is 1 (T <= floor_scale - 1).
std::shared_ptr<const std::vector<real>> tuning_row_scales(const AttentionScalingSettings& s, std::size_t T);

// True for the scalings with a parameter per layer and head (learned, ssmax).
bool learned_scaling(const std::string& scaling);

const std::vector<std::string>& attention_scaling_names();

// log(n) / log(L), floored at 1 when clamp. L >= 2, n >= 1.
double log_length_scale(std::size_t n, std::size_t L, bool clamp);

// The per-query-row logit multipliers (T of them), or null for none and learned (learned multiplies per
// head only; ssmax per head times these rows, log n). L: the resolved log-length base.
std::shared_ptr<const std::vector<real>> query_row_scales(const AttentionScalingSettings& s, std::size_t T,
                                                          bool causal, std::size_t L, std::size_t window = 0,
                                                          std::size_t chunk = 0);

}  // namespace pelab
