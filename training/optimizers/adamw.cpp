// AdamW (torch.optim.AdamW): the whole optimizer, registered as "adamw" with its [train.adamw] parameters.
// Nothing else names the class: the trainer and the tests build it through make_optimizer.
#include <cmath>

#include <algorithm>

#include "core/parallel.hpp"
#include "core/simd.hpp"
#include "core/tape.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab {

namespace {

// One AdamW update of n elements, torch.optim.AdamW's single-tensor arithmetic in its order:
// p *= decay_mul (when decay); m = b1 m + omb1 g; v = b2 v + omb2 g g; p += neg_step m / (sqrt(v) / bc2_sqrt + eps).
// One fused loop (p * 1 = p exactly when not decaying), compiled per instruction set (core/simd.hpp).
PELAB_HOT
void adamw_update(real* p, const real* g, real* m, real* v, std::size_t n, real b1, real omb1, real b2, real omb2,
                  real eps, real neg_step, real bc2_sqrt, bool decay, real decay_mul) {
  real* __restrict pp = p;
  const real* __restrict gg = g;
  real* __restrict mm = m;
  real* __restrict vv = v;
  const real dm = decay ? decay_mul : real(1);
  for (std::size_t j = 0; j < n; ++j) {
    const real pj = pp[j] * dm;
    const real mj = mm[j] * b1 + omb1 * gg[j];
    const real vj = vv[j] * b2 + omb2 * gg[j] * gg[j];
    mm[j] = mj;
    vv[j] = vj;
    const real denom = std::sqrt(vj) / bc2_sqrt + eps;
    pp[j] = pj + neg_step * mj / denom;
  }
}

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  ParamGroupRule rule;
};

// torch.optim.AdamW: p *= 1 - lr*wd (decaying params only); m = b1 m + (1-b1) g;
// v = b2 v + (1-b2) g^2; p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Parameter> params, const AdamWConfig& cfg);
  const char* kind() const override { return "adamw"; }
  void step(double lr) override;

 private:
  AdamWConfig cfg_;
  std::vector<bool> decay_;
  struct Slot {  // one parameter's update within step()
    real *p, *m, *v;
    const real* g;
    std::size_t begin, n;  // its elements in the run of all updated parameters
    real neg_step, bc2_sqrt;
    bool decay;
  };
  std::vector<Slot> slots_;
};

AdamW::AdamW(std::vector<Parameter> params, const AdamWConfig& cfg) : Optimizer(std::move(params)), cfg_(cfg) {
  optimizer_detail::check_range(cfg.beta1, 0, 1, true, "beta1");
  optimizer_detail::check_range(cfg.beta2, 0, 1, true, "beta2");
  optimizer_detail::check_range(cfg.eps, 0, 1, false, "eps");
  optimizer_detail::check_range(cfg.weight_decay, 0, 1e3, false, "weight_decay");
  decay_ = optimizer_detail::decay_mask(params_, cfg.rule);
  add_buffers("m");
  add_buffers("v");
  slots_.reserve(params_.size());
}

void AdamW::step(double lr) {
  NoGrad no_grad;
  ++steps_;
  // Scalars as PyTorch computes them (Python doubles), rounded to float where they meet a tensor.
  const real b1 = real(cfg_.beta1), omb1 = real(1 - cfg_.beta1);
  const real b2 = real(cfg_.beta2), omb2 = real(1 - cfg_.beta2);
  const real eps = real(cfg_.eps);
  const real decay_mul = real(1 - lr * cfg_.weight_decay);
  // The parameters with a gradient, as one run of elements (Slot::begin: where each one starts),
  // split over the step's threads by elements: the update is elementwise, so the split changes nothing.
  slots_.clear();  // capacity reserved in the constructor: no allocation per step
  std::size_t total = 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& pt = params_[i].tensor;
    if (!pt.has_grad()) continue;
    const std::uint64_t t = ++t_[i];
    const double bc1 = 1 - std::pow(cfg_.beta1, double(t));
    const double bc2 = 1 - std::pow(cfg_.beta2, double(t));
    const std::size_t n = pt.numel();
    slots_.push_back({pt.mutable_data(), buffers_[0][i].data(), buffers_[1][i].data(), pt.grad().data(), total, n,
                      real(-(lr / bc1)), real(std::sqrt(bc2)), decay_[i] && cfg_.weight_decay != 0});
    total += n;
  }
  parallel::for_range(total, std::size_t(1) << 15, [&](std::size_t, std::size_t e0, std::size_t e1) {
    std::size_t k = 0;
    while (k + 1 < slots_.size() && slots_[k].begin + slots_[k].n <= e0) ++k;
    for (; k < slots_.size() && slots_[k].begin < e1; ++k) {
      const Slot& sl = slots_[k];
      const std::size_t lo = std::max(e0, sl.begin) - sl.begin, hi = std::min(e1, sl.begin + sl.n) - sl.begin;
      adamw_update(sl.p + lo, sl.g + lo, sl.m + lo, sl.v + lo, hi - lo, b1, omb1, b2, omb2, eps,
                            sl.neg_step, sl.bc2_sqrt, sl.decay, decay_mul);
    }
  });
}

}  // namespace

PELAB_REGISTER_OPTIMIZER(adamw, OptimizerSpec{
    "adamw",
    "Adam with decoupled weight decay (torch.optim.AdamW)",
    {
        number_param("beta1", 0.9, "decay of the gradient mean").in_half_open(0.0, 1.0),
        number_param("beta2", 0.999, "decay of the squared-gradient mean").in_half_open(0.0, 1.0),
        number_param("eps", 1e-8, "added to the denominator").in(1e-30, 1.0),
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
    [](const Params&) -> std::size_t { return 2; },  // m, v
});

}  // namespace pelab
