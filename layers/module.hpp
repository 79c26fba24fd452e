// Module: a named tree of parameters. A parameter's full dotted name (e.g. "blocks.0.attn.qkv.weight")
// is its checkpoint key and what the PyTorch fixtures use.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "core/tensor.hpp"

namespace pelab {

// What a parameter is decides its initialization (init_parameters below) and whether weight decay applies.
enum class ParamKind {
  weight,     // Linear weights: normal(0, init_std), decayed
  embedding,  // token embeddings and learned position tables: normal(0, emb_init_std), decayed
  bias,       // Linear biases: zeros, not decayed
  norm_gain,  // LayerNorm gains: ones, not decayed
  norm_bias,  // LayerNorm biases: zeros, not decayed
};
const char* kind_name(ParamKind k);

// Fills a parameter at initialization instead of its kind's rule (e.g. Kerple's positive per-head
// parameters, FIRE's c = 0.1); draws from the init stream like the rules do.
using Initializer = std::function<void(Array& value, Rng& rng)>;

struct Parameter {
  std::string name;
  Tensor tensor;
  ParamKind kind;
  Initializer init;  // empty: the kind's rule
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its children, depth-first in registration order.
  std::vector<Parameter> parameters() const;
  std::size_t num_parameters() const;  // scalar count
  // Finds a parameter by full name; throws Error listing near names when absent.
  Tensor parameter(const std::string& name) const;

  void set_training(bool on);  // recursive; dropout is active only in training mode
  bool training() const { return training_; }
  void zero_grad();

 protected:
  // A trainable tensor of zeros; `init` replaces the kind's initialization (the kind still decides decay).
  Tensor add_parameter(const std::string& name, const Shape& shape, ParamKind kind, Initializer init = nullptr);
  template <class M>
  M& add_module(const std::string& name, std::unique_ptr<M> m) {
    M& ref = *m;
    children_.emplace_back(name, std::move(m));
    return ref;
  }

 private:
  void collect(const std::string& prefix, std::vector<Parameter>& out) const;
  std::vector<Parameter> params_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
  bool training_ = true;
};

// Initialization, in one place. A parameter with an Initializer uses it; otherwise Linear weights ~ normal(0, init_std), embeddings (token and learned
// position tables) ~ normal(0, emb_init_std); biases zeros; LayerNorm gains ones and biases zeros
// (GPT-2's scheme without its residual rescaling).
void init_parameters(const Module& m, Rng& rng, double init_std = 0.02, double emb_init_std = 0.02);

}  // namespace pelab
