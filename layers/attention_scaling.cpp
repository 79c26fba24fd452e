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

std::size_t visible_keys(std::size_t t, std::size_t T, bool causal, std::size_t window, std::size_t chunk) {
  std::size_t n = causal ? t + 1 : T;
  if (causal && chunk) n = t - t / chunk * chunk + 1;  // keys [floor(t / chunk) chunk, t]
  return window && n > window ? window : n;
}

namespace {
// A per-layer pattern "a,b,..." of non-negative integers (`none_word` reads as 0 when given) repeated
// over n_layers; `what` names the key in errors, `expected` says what an item may be.
std::vector<std::size_t> layer_pattern(const std::string& what, const std::string& pattern, std::size_t n_layers,
                                       const std::string& expected, const char* none_word = nullptr) {
  std::vector<std::size_t> w;
  std::stringstream in(pattern);
  for (std::string item; std::getline(in, item, ',');) {
    const auto b = item.find_first_not_of(' ');
    if (none_word && b != std::string::npos && item.substr(b, item.find_last_not_of(' ') + 1 - b) == none_word) {
      w.push_back(0);
      continue;
    }
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    while (used < item.size() && item[used] == ' ') ++used;
    if (v < 0 || used != item.size() || b == std::string::npos || item[0] == '-')
      throw Error(what + ": '" + item + "' is not " + expected);
    w.push_back(static_cast<std::size_t>(v));
  }
  if (w.empty() || n_layers % w.size() != 0)
    throw Error(what + " has " + std::to_string(w.size()) + " entries for " + std::to_string(n_layers) +
                " layers; expected a pattern whose length divides model.n_layers");
  std::vector<std::size_t> out(n_layers);
  for (std::size_t i = 0; i < n_layers; ++i) out[i] = w[i % w.size()];
  return out;
}
}  // namespace

std::vector<std::size_t> layer_windows(const std::string& pattern, std::size_t n_layers) {
  return layer_pattern("attention.window \"" + pattern + "\"", pattern, n_layers,
                       "a non-negative integer; expected keys per layer, 0 = no window, as \"64\" or a pattern \"0,64\"");
}

std::vector<std::size_t> layer_chunks(const std::string& pattern, std::size_t n_layers) {
  const std::string what = "attention.chunk \"" + pattern + "\"";
  const std::string expected = "a positive integer or none; expected keys per chunk, as \"8192\" or a pattern "
                               "\"8,8,8,none\" (none = no chunk)";
  std::stringstream in(pattern);
  for (std::string item; std::getline(in, item, ',');)
    if (item.find_first_not_of(" 0") == std::string::npos && item.find('0') != std::string::npos)
      throw Error(what + ": a chunk of 0 keys would leave a query no key; expected " + expected.substr(expected.find(';') + 2));
  return layer_pattern(what, pattern, n_layers, expected, "none");
}

std::vector<bool> layer_tuning(const std::string& pattern, std::size_t n_layers) {
  const std::string what = "attention.temperature_tuning \"" + pattern + "\"";
  const std::string expected = "0 or 1; expected a pattern of 0 (off) and 1 (on) per layer, as \"1\" or \"0,0,0,1\"";
  const std::vector<std::size_t> v = layer_pattern(what, pattern, n_layers, expected);
  std::vector<bool> out;
  for (std::size_t x : v) {
    if (x > 1) throw Error(what + ": '" + std::to_string(x) + "' is not " + expected);
    out.push_back(x == 1);
  }
  return out;
}

double tuning_scale(std::size_t t, double floor_scale, double attn_scale) {
  return std::log(std::floor((double(t) + 1.0) / floor_scale) + 1.0) * attn_scale + 1.0;
}

std::shared_ptr<const std::vector<real>> tuning_row_scales(const AttentionScalingSettings& s, std::size_t T) {
  if (double(T) < s.tuning_floor_scale) return nullptr;  // floor((t + 1) / F) = 0 on every row: all 1
  auto rows = std::make_shared<std::vector<real>>(T);
  for (std::size_t t = 0; t < T; ++t) (*rows)[t] = real(tuning_scale(t, s.tuning_floor_scale, s.tuning_attn_scale));
  return rows;
}

std::shared_ptr<const std::vector<real>> query_row_scales(const AttentionScalingSettings& s, std::size_t T,
                                                          bool causal, std::size_t L, std::size_t window,
                                                          std::size_t chunk) {
  if (s.scaling != "fixed" && s.scaling != "log_length" && s.scaling != "ssmax") return nullptr;
  auto rows = std::make_shared<std::vector<real>>(T);
  const double inv_t = 1.0 / s.temperature;
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t n = visible_keys(t, T, causal, window, chunk);
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
