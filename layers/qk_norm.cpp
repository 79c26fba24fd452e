#include "layers/qk_norm.hpp"

#include <sstream>

#include "core/ops/elementwise.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/unary.hpp"

namespace pelab {

std::vector<bool> layer_qk_norms(const std::string& pattern, std::size_t n_layers) {
  const std::string what = "attention.qk_norm \"" + pattern + "\"";
  std::vector<bool> items;
  std::stringstream in(pattern);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item != "on" && item != "off")
      throw Error(what + ": '" + item + "' is not on or off; expected \"on\", \"off\", or a pattern repeated over "
                  "the layers such as \"on,on,on,off\"");
    items.push_back(item == "on");
  }
  if (items.empty() || pattern.back() == ',' || n_layers % items.size() != 0)
    throw Error(what + " has " + std::to_string(items.size()) + " entries for " + std::to_string(n_layers) +
                " layers; expected a pattern whose length divides model.n_layers");
  std::vector<bool> out(n_layers);
  for (std::size_t i = 0; i < n_layers; ++i) out[i] = items[i % items.size()];
  return out;
}

// Composite of existing ops (each gradient-checked): mean(x^2) (B, H, T, 1), then x / sqrt(. + eps) * g.
Tensor rms_norm_last(const Tensor& x, const Tensor& gain, real eps) {
  const Tensor ms = mean(square(x), {-1}, true);  // (B, H, T, 1)
  return mul(div(x, pelab::sqrt(add_scalar(ms, eps))), gain);
}

}  // namespace pelab
