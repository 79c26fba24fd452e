#include "layers/attention_scaling.hpp"

#include <cmath>
#include <sstream>

#include "core/tensor.hpp"

namespace pelab {

const std::vector<std::string>& attention_scaling_names() {
  static const std::vector<std::string> names = {"none", "fixed", "log_length", "learned", "ssmax"};
  return names;
}

double log_length_scale(std::size_t n, std::size_t L, bool clamp) {
  const double r = std::log(double(n)) / std::log(double(L));
  return clamp && r < 1.0 ? 1.0 : r;
}

bool learned_scaling(const std::string& scaling) { return scaling == "learned" || scaling == "ssmax"; }

std::size_t visible_keys(std::size_t t, std::size_t T, bool causal, std::size_t window) {
  const std::size_t n = causal ? t + 1 : T;
  return window && n > window ? window : n;
}

std::vector<std::size_t> layer_windows(const std::string& pattern, std::size_t n_layers) {
  const std::string what = "attention.window \"" + pattern + "\"";
  std::vector<std::size_t> w;
  std::stringstream in(pattern);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    while (used < item.size() && item[used] == ' ') ++used;
    if (v < 0 || used != item.size() || item.find_first_not_of(" ") == std::string::npos || item[0] == '-')
      throw Error(what + ": '" + item + "' is not a non-negative integer; expected keys per layer, 0 = no window, "
                  "as \"64\" or a pattern \"0,64\"");
    w.push_back(static_cast<std::size_t>(v));
  }
  if (w.empty() || n_layers % w.size() != 0)
    throw Error(what + " has " + std::to_string(w.size()) + " entries for " + std::to_string(n_layers) +
                " layers; expected a pattern whose length divides model.n_layers");
  std::vector<std::size_t> out(n_layers);
  for (std::size_t i = 0; i < n_layers; ++i) out[i] = w[i % w.size()];
  return out;
}

std::shared_ptr<const std::vector<real>> query_row_scales(const AttentionScalingSettings& s, std::size_t T,
                                                          bool causal, std::size_t L, std::size_t window) {
  if (s.scaling != "fixed" && s.scaling != "log_length" && s.scaling != "ssmax") return nullptr;
  auto rows = std::make_shared<std::vector<real>>(T);
  const double inv_t = 1.0 / s.temperature;
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t n = visible_keys(t, T, causal, window);
    if (s.scaling == "ssmax") {
      (*rows)[t] = static_cast<real>(std::log(double(n)));  // times the learned s_h
      continue;
    }
    const double f = s.scaling == "fixed" ? 1.0 : log_length_scale(n, L, s.log_length_clamp);
    (*rows)[t] = static_cast<real>(f * inv_t);
  }
  return rows;
}

}  // namespace pelab
