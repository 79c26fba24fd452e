#include "layers/canon.hpp"

#include <cmath>

#include "core/ops/causal_conv.hpp"
#include "core/ops/elementwise.hpp"

namespace pelab {

void check_canon_settings(const CanonSettings& s) {
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const char p = s.points[i];
    if (std::string("ABCD").find(p) == std::string::npos || s.points.find(p) != i)
      throw Error("canon.points \"" + s.points + "\": '" + std::string(1, p) + "' is " +
                  (s.points.find(p) != i ? "repeated" : "not a Canon point") +
                  "; expected a subset of \"ABCD\" (A before attention, B on q/k/v, C before the MLP, D in the MLP)");
  }
  if (s.kernel == 0) throw Error("canon.kernel = 0: expected at least 1 tap (the current token)");
}

Canon::Canon(std::size_t channels, std::size_t kernel, bool residual) : residual(residual) {
  // torch's Conv1d default (kaiming_uniform with a = sqrt(5)): uniform(-b, b), b = 1/sqrt(fan_in), fan_in = K.
  const double bound = 1.0 / std::sqrt(double(kernel));
  weight = add_parameter("weight", {channels, 1, kernel}, ParamKind::weight, [bound](Array& v, Rng& rng) {
    for (auto& x : v) x = real((2 * rng.uniform() - 1) * bound);
  });
}

Tensor Canon::forward(const Tensor& x) const {
  const Tensor y = causal_depthwise_conv(x, weight);  // (B, T, C)
  return residual ? add(x, y) : y;
}

}  // namespace pelab
