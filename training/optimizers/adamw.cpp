// AdamW (torch.optim.AdamW), registered as "adamw" with its [train.adamw] parameters.
#include <cmath>

#include "core/tape.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab {

AdamW::AdamW(std::vector<Parameter> params, const AdamWConfig& cfg) : Optimizer(std::move(params)), cfg_(cfg) {
  optimizer_detail::check_range(cfg.beta1, 0, 1, true, "beta1");
  optimizer_detail::check_range(cfg.beta2, 0, 1, true, "beta2");
  optimizer_detail::check_range(cfg.eps, 0, 1, false, "eps");
  optimizer_detail::check_range(cfg.weight_decay, 0, 1e3, false, "weight_decay");
  decay_ = optimizer_detail::decay_mask(params_, cfg.rule);
  add_buffers("m");
  add_buffers("v");
}

void AdamW::step(double lr) {
  NoGrad no_grad;
  ++steps_;
  // Scalars as PyTorch computes them (Python doubles), rounded to float where they meet a tensor.
  const real b1 = real(cfg_.beta1), omb1 = real(1 - cfg_.beta1);
  const real b2 = real(cfg_.beta2), omb2 = real(1 - cfg_.beta2);
  const real eps = real(cfg_.eps);
  const real decay_mul = real(1 - lr * cfg_.weight_decay);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& pt = params_[i].tensor;
    if (!pt.has_grad()) continue;
    const std::uint64_t t = ++t_[i];
    const double bc1 = 1 - std::pow(cfg_.beta1, double(t));
    const double bc2 = 1 - std::pow(cfg_.beta2, double(t));
    const real neg_step = real(-(lr / bc1));
    const real bc2_sqrt = real(std::sqrt(bc2));
    const real* g = pt.grad().data();
    real* p = pt.mutable_data();
    real* m = buffers_[0][i].data();
    real* v = buffers_[1][i].data();
    const std::size_t n = pt.numel();
    if (decay_[i] && cfg_.weight_decay != 0)
      for (std::size_t j = 0; j < n; ++j) p[j] *= decay_mul;
    for (std::size_t j = 0; j < n; ++j) {
      m[j] = m[j] * b1 + omb1 * g[j];
      v[j] = v[j] * b2 + omb2 * g[j] * g[j];
      const real denom = std::sqrt(v[j]) / bc2_sqrt + eps;
      p[j] = p[j] + neg_step * m[j] / denom;
    }
  }
}

PELAB_REGISTER_OPTIMIZER(adamw, OptimizerSpec{
    "adamw",
    "Adam with decoupled weight decay (torch.optim.AdamW)",
    {
        {"beta1", ValueType::number, 0.9, 0.0, 1.0, {}, "decay of the gradient mean", true},
        {"beta2", ValueType::number, 0.999, 0.0, 1.0, {}, "decay of the squared-gradient mean", true},
        {"eps", ValueType::number, 1e-8, 1e-30, 1.0, {}, "added to the denominator"},
    },
    [](std::vector<Parameter> params, const Params& p, const OptimizerCommon& common) -> std::unique_ptr<Optimizer> {
      AdamWConfig c;
      c.beta1 = p.get_number("beta1");
      c.beta2 = p.get_number("beta2");
      c.eps = p.get_number("eps");
      c.weight_decay = common.weight_decay;
      c.rule = common.rule;
      return std::make_unique<AdamW>(std::move(params), c);
    },
});

}  // namespace pelab
