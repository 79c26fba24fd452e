#include "layers/basic.hpp"

#include "core/ops/embedding.hpp"
#include "core/ops/layer_norm.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/unary.hpp"

namespace pelab {

Linear::Linear(std::size_t in, std::size_t out, bool with_bias, bool residual) {
  weight = add_parameter("weight", {out, in}, ParamKind::weight, in, residual);
  if (with_bias) bias = add_parameter("bias", {out}, ParamKind::bias, in, residual);
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

Embedding::Embedding(std::size_t rows, std::size_t dim) {
  weight = add_parameter("weight", {rows, dim}, ParamKind::embedding);
}

Tensor Embedding::forward(const IndexArray& ids) const { return embedding(weight, ids); }

LayerNorm::LayerNorm(std::size_t dim, real eps_) : eps(eps_) {
  weight = add_parameter("weight", {dim}, ParamKind::norm_gain);
  bias = add_parameter("bias", {dim}, ParamKind::norm_bias);
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }

Activation parse_activation(const std::string& name) {
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_tanh") return Activation::gelu_tanh;
  if (name == "relu") return Activation::relu;
  throw Error("unknown activation '" + name + "'; allowed: gelu, gelu_tanh, relu");
}

Tensor activate(const Tensor& x, Activation a) {
  switch (a) {
    case Activation::gelu: return gelu(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
    case Activation::relu: return relu(x);
  }
  return x;
}

MLP::MLP(std::size_t dim, std::size_t hidden, Activation a) : act(a) {
  fc = &add_module("fc", std::make_unique<Linear>(dim, hidden));
  proj = &add_module("proj", std::make_unique<Linear>(hidden, dim, true, /*residual=*/true));
}

Tensor MLP::forward(const Tensor& x) const {
  // GELU fused with its linear layer (bias, activation and their gradients in one pass each).
  if (act == Activation::gelu) return proj->forward(linear_gelu(x, fc->weight, fc->bias));
  return proj->forward(activate(fc->forward(x), act));
}

}  // namespace pelab
