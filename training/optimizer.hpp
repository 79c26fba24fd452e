// The optimizer interface, gradient clipping and the weight-decay grouping rule. Each optimizer (AdamW,
// SGD, ...) is one file in training/optimizers/ holding its class and its registration
// (training/optimizer_registry.hpp) with its own [train.<name>] parameters; everyone else, the trainer
// and the tests included, builds one by name with make_optimizer.
//
// An optimizer holds the model's parameters (Module::parameters()), reads each one's gradient and
// updates its value in place (through mutable_data, which bumps the version: a tape recorded before
// the update can no longer be backpropagated, as intended). Per-parameter buffers are allocated once,
// in the constructor; step() allocates nothing. The arithmetic follows PyTorch's single-tensor
// implementations (torch 1.13) operation by operation, in float, with scalar factors in double.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/safetensors.hpp"
#include "layers/module.hpp"

namespace pelab {

// Which parameters weight decay applies to. Linear weights always; embeddings (token embeddings and
// learned position tables) by default; biases and LayerNorm parameters not by default.
struct ParamGroupRule {
  bool decay_norm_and_bias = false;
  bool decay_embeddings = true;
};
bool decays(const Parameter& p, const ParamGroupRule& rule);

namespace optimizer_detail {
std::vector<bool> decay_mask(const std::vector<Parameter>& params, const ParamGroupRule& rule);
// Throws Error unless lo <= v <= hi (v < hi when hi_open); `what` names the hyperparameter.
void check_range(double v, double lo, double hi, bool hi_open, const std::string& what);
}  // namespace optimizer_detail

class Optimizer {
 public:
  explicit Optimizer(std::vector<Parameter> params);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual const char* kind() const = 0;  // "adamw" | "sgd": the prefix of its checkpoint keys
  // One update with learning rate lr. Parameters without a gradient are skipped (their buffers and
  // step counts do not advance, as in PyTorch).
  virtual void step(double lr) = 0;
  void zero_grad();  // drops every parameter's gradient

  const std::vector<Parameter>& params() const { return params_; }
  std::size_t steps() const { return steps_; }  // step() calls so far

  // Checkpoint state: tensors "<kind>.<buffer>.<param name>" (F32, the parameter's shape) and metadata
  // "optimizer" = kind, "<kind>.steps" and "<kind>.t.<param name>" (per-parameter update counts, as
  // decimal strings so they are exact).
  void state_to(SafeTensors& st) const;
  // The inverse. Checks everything before changing anything: the kind, every expected key present
  // with the parameter's shape, no unexpected "<kind>." key; throws Error naming the key (and both
  // shapes) otherwise.
  void state_from(const SafeTensors& st);

 protected:
  // Called by a derived constructor: one zero buffer per parameter per name (e.g. "m", "v").
  void add_buffers(const std::string& name);

  std::vector<Parameter> params_;
  std::vector<std::string> buffer_names_;
  std::vector<std::vector<Array>> buffers_;  // [buffer][param]
  std::vector<std::uint64_t> t_;             // per-parameter update counts
  std::size_t steps_ = 0;
};

// torch.nn.utils.clip_grad_norm_: the global L2 norm of all gradients (accumulated in double); if
// max_norm > 0 and norm > max_norm, every gradient is scaled by max_norm / (norm + 1e-6). Returns the
// norm before clipping. A non-finite norm leaves the gradients untouched (the caller decides to skip).
double clip_grad_norm(const std::vector<Parameter>& params, double max_norm);

// True when every gradient element of every parameter that has a gradient is finite.
bool all_finite_grads(const std::vector<Parameter>& params);

}  // namespace pelab
