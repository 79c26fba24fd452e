#include "layers/positional/rope_scaling.hpp"

#include <algorithm>
#include <cmath>

#include "core/ops/rotary.hpp"

namespace pelab {

double ntk_base(double base, double s, std::size_t rot) {
  return base * std::pow(s, double(rot) / double(rot - 2));
}

double dynamic_ntk_factor(double factor, std::size_t n, std::size_t original_len) {
  if (n <= original_len) return 1.0;
  return factor * double(n) / double(original_len) - (factor - 1.0);
}

double yarn_ramp(double r, double alpha, double beta) {
  return std::clamp((r - alpha) / (beta - alpha), 0.0, 1.0);
}

double yarn_mscale(double s, double coeff) { return s <= 1 ? 1.0 : coeff * std::log(s) + 1.0; }

std::vector<double> scaled_rope_inv_freq(std::size_t rot, double base, const RopeScaling& sc, std::size_t n) {
  const double s = sc.factor;
  if (sc.method == "ntk") return rotary_inv_freq(rot, ntk_base(base, s, rot));
  if (sc.method == "dynamic_ntk") return rotary_inv_freq(rot, ntk_base(base, dynamic_ntk_factor(s, n, sc.original_len), rot));
  std::vector<double> theta = rotary_inv_freq(rot, base);
  if (sc.method == "pi") {
    for (double& t : theta) t /= s;
  } else if (sc.method == "yarn") {
    const double two_pi = 2.0 * std::acos(-1.0);
    for (double& t : theta) {
      const double r = double(sc.original_len) * t / two_pi;  // rotations within the original context
      const double g = yarn_ramp(r, sc.alpha, sc.beta);
      t = (1.0 - g) * t / s + g * t;
    }
  }
  return theta;
}

double rope_table_scale(const RopeScaling& sc) {
  return sc.method == "yarn" ? yarn_mscale(sc.factor, sc.mscale_coeff) : 1.0;
}

}  // namespace pelab
