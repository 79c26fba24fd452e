#include "layers/attention_scaling.hpp"

#include <cmath>

namespace pelab {

const std::vector<std::string>& attention_scaling_names() {
  static const std::vector<std::string> names = {"none", "fixed", "log_length", "learned"};
  return names;
}

double log_length_scale(std::size_t n, std::size_t L, bool clamp) {
  const double r = std::log(double(n)) / std::log(double(L));
  return clamp && r < 1.0 ? 1.0 : r;
}

std::shared_ptr<const std::vector<real>> query_row_scales(const AttentionScalingSettings& s, std::size_t T,
                                                          bool causal, std::size_t L) {
  if (s.scaling != "fixed" && s.scaling != "log_length") return nullptr;
  auto rows = std::make_shared<std::vector<real>>(T);
  const double inv_t = 1.0 / s.temperature;
  for (std::size_t t = 0; t < T; ++t) {
    const double f = s.scaling == "fixed" ? 1.0 : log_length_scale(causal ? t + 1 : T, L, s.log_length_clamp);
    (*rows)[t] = static_cast<real>(f * inv_t);
  }
  return rows;
}

}  // namespace pelab
