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
// Encodings with parameters of their own (the learned position table) declare a kind too and are
// initialized by it under every scheme.
enum class ParamKind {
  weight,     // Linear weights, decayed
  embedding,  // token embeddings and learned position tables, decayed
  bias,       // Linear biases, not decayed
  norm_gain,  // LayerNorm gains, not decayed
  norm_bias,  // LayerNorm biases, not decayed
};
const char* kind_name(ParamKind k);

// Fills a parameter at initialization instead of the scheme's rule for its kind, under every scheme
// (e.g. Kerple's positive per-head parameters, FIRE's c = 0.1); draws from the init stream like the rules.
using Initializer = std::function<void(Array& value, Rng& rng)>;

struct Parameter {
  std::string name;
  Tensor tensor;
  ParamKind kind;
  std::size_t fan_in = 0;  // a Linear's weight and bias: its input width (PyTorch's init bound); else 0
  bool residual = false;   // a Linear writing into the residual stream (attention out-projection, MLP proj)
  Initializer init;        // set: fills the parameter instead of the scheme (see Initializer)
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
  Tensor add_parameter(const std::string& name, const Shape& shape, ParamKind kind, std::size_t fan_in = 0,
                       bool residual = false);
  // A parameter filled by `init` at initialization, whatever the scheme (the kind still decides decay).
  Tensor add_parameter(const std::string& name, const Shape& shape, ParamKind kind, Initializer init);
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

// Initialization schemes, by ParamKind ([model] init):
//                 weight                      embedding             bias                       LayerNorm
//   gpt2          N(0, std)                   N(0, emb_std)         0                          gain 1, bias 0
//   scaled        as gpt2; residual weights   N(0, emb_std)         0                          gain 1, bias 0
//                 N(0, std / sqrt(2 n_layers))
//   pytorch       U(-b, b), b = 1/sqrt(fan_in) N(0, 1)              U(-b, b), b = 1/sqrt(fan_in) gain 1, bias 0
// gpt2 is GPT-2's scheme without its residual rescaling; scaled adds it (GPT-2 paper, nanoGPT: the
// attention out-projection and the MLP's second linear, 2 per block). pytorch is what a model built from
// nn.Linear (kaiming_uniform_(a = sqrt(5)) weights, uniform biases), nn.Embedding (also the learned
// position table) and nn.LayerNorm starts with; std and emb_std do not apply to it. fan_in is the
// Linear's input width (a weight without one: the product of its dims after the first, as PyTorch).
enum class InitScheme { gpt2, pytorch, scaled };
const char* init_scheme_name(InitScheme s);          // "gpt2" | "pytorch" | "scaled"
InitScheme parse_init_scheme(const std::string& name);  // Error listing the allowed names

struct InitOptions {
  InitScheme scheme = InitScheme::gpt2;
  double std = 0.02;          // gpt2, scaled: Linear weights
  double emb_std = 0.02;      // gpt2, scaled: token embeddings and learned position tables
  std::size_t n_layers = 1;   // scaled: transformer blocks
  // Called before each parameter is drawn, e.g. a stop poll (training/signals.hpp) that throws: a large
  // model takes seconds to initialize.
  std::function<void()> between_parameters;
};

// Draws every parameter of m, in parameters() order, from `rng`.
void init_parameters(const Module& m, Rng& rng, const InitOptions& o);
// The gpt2 scheme.
void init_parameters(const Module& m, Rng& rng, double init_std = 0.02, double emb_init_std = 0.02);

}  // namespace pelab
