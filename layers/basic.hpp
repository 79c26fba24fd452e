// The basic layers: Linear, Embedding, LayerNorm, MLP.
#pragma once

#include "core/rng.hpp"
#include "layers/module.hpp"

namespace pelab {

class Linear : public Module {
 public:
  // residual: the layer writes into the residual stream (the "scaled" init shrinks its weights).
  Linear(std::size_t in, std::size_t out, bool bias = true, bool residual = false);
  Tensor forward(const Tensor& x) const;  // (..., in) -> (..., out)
  Tensor weight, bias;                    // (out, in), (out,) or undefined
};

class Embedding : public Module {
 public:
  Embedding(std::size_t rows, std::size_t dim);
  Tensor forward(const IndexArray& ids) const;  // (...) -> (..., dim)
  Tensor weight;                                // (rows, dim)
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::size_t dim, real eps = real(1e-5));
  Tensor forward(const Tensor& x) const;  // over the last axis
  Tensor weight, bias;
  real eps;
};

enum class Activation { gelu, gelu_tanh, relu };
Activation parse_activation(const std::string& name);  // "gelu" | "gelu_tanh" | "relu"
Tensor activate(const Tensor& x, Activation a);

// d -> hidden -> d with an activation in between (hidden = 4d by default in the model); proj is a
// residual projection.
class MLP : public Module {
 public:
  MLP(std::size_t dim, std::size_t hidden, Activation act);
  Tensor forward(const Tensor& x) const;
  Linear *fc, *proj;
  Activation act;
};

}  // namespace pelab
