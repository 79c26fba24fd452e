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
};

const std::vector<std::string>& attention_scaling_names();

// log(n) / log(L), floored at 1 when clamp. L >= 2, n >= 1.
double log_length_scale(std::size_t n, std::size_t L, bool clamp);

// The per-query-row logit multipliers (T of them) of a parameter-free scaling, or null for none and
// learned (learned multiplies per head instead). L: the resolved log-length base.
std::shared_ptr<const std::vector<real>> query_row_scales(const AttentionScalingSettings& s, std::size_t T,
                                                          bool causal, std::size_t L);

}  // namespace pelab
