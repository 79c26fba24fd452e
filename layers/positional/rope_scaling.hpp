// RoPE length extension: how a model trained with plain RoPE on positions < L is run on longer
// sequences by changing only its rotation frequencies (and, for YaRN, the logit temperature).
//   pi           position interpolation (Chen et al. 2023): positions p / s, i.e. theta_i / s.
//   ntk          "NTK-aware" scaling (bloc97, 2023): base -> base * s^(d / (d - 2)), d the rotated dims;
//                the highest frequency is unchanged, the lowest is divided by s.
//   dynamic_ntk  ntk with a factor from the current length n (a row's largest position id + 1, as Hugging
//                Face's max(position_ids) + 1, but per row): s_n = factor * n / L - (factor - 1) when n > L,
//                else no scaling. One forward over T tokens scales every position by s_T (a cached decoder
//                would grow s token by token). The frequencies then depend on the ids themselves: shifting
//                every id changes the logits (not relative, unlike the other methods).
//   yarn         YaRN (Peng et al. 2023), "NTK-by-parts": per frequency, r_i = L / lambda_i with the
//                wavelength lambda_i = 2 pi / theta_i, ramp g(r) = clamp((r - alpha) / (beta - alpha), 0, 1),
//                theta_i' = (1 - g) theta_i / s + g theta_i (long wavelengths interpolated, short ones kept);
//                plus the attention temperature sqrt(1/t) = mscale = 0.1 ln(s) + 1 on q and k, folded
//                into the rotation tables as in the reference code: the rotated dims' part of the logits
//                is multiplied by mscale^2 (all of the logits when fraction = 1; with fraction < 1 the
//                unrotated dims keep their scale, as Hugging Face's partial rotary does). This is the paper's continuous ramp over r; Hugging Face's rounds its ends to whole
//                dims.
// L is the original context: [encoding.rope] original_len, or 0 = the training position range.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pelab {

struct RopeScaling {
  std::string method = "none";  // none | pi | ntk | dynamic_ntk | yarn
  double factor = 1;            // s >= 1
  double alpha = 1, beta = 32;  // yarn's ramp ends, in rotations per original context
  double mscale_coeff = 0.1;    // yarn: mscale = mscale_coeff * ln(s) + 1 (0: no temperature)
  std::size_t original_len = 0; // L
};

// NTK-aware base: base * s^(rot / (rot - 2)); rot >= 4.
double ntk_base(double base, double s, std::size_t rot);
// Dynamic NTK's factor for a forward pass whose largest position id is n - 1.
double dynamic_ntk_factor(double factor, std::size_t n, std::size_t original_len);
// YaRN's ramp g(r) in [0, 1].
double yarn_ramp(double r, double alpha, double beta);
// YaRN's q/k magnitude 0.1 ln(s) + 1 (coeff * ln(s) + 1); 1 for s <= 1.
double yarn_mscale(double s, double coeff);
// The frequencies theta_i (rot / 2 of them) for a forward pass whose largest position id is n - 1.
std::vector<double> scaled_rope_inv_freq(std::size_t rot, double base, const RopeScaling& sc, std::size_t n);
// The magnitude folded into the rotation tables (yarn's mscale; 1 otherwise).
double rope_table_scale(const RopeScaling& sc);

}  // namespace pelab
