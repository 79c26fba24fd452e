// SGD with momentum (torch.optim.SGD): the whole optimizer, registered as "sgd" with its [train.sgd]
// parameters. Nothing else names the class: the trainer and the tests build it through make_optimizer.
#include "core/tape.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab {

namespace {

struct SGDConfig {
  double momentum = 0.9, weight_decay = 0;
  ParamGroupRule rule;
};

// torch.optim.SGD (no dampening, no nesterov): d = g + wd*p (decaying params only, L2 style);
// buf = d on a parameter's first update, else momentum*buf + d; p -= lr*buf. momentum 0: p -= lr*d.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Parameter> params, const SGDConfig& cfg);
  const char* kind() const override { return "sgd"; }
  void step(double lr) override;

 private:
  SGDConfig cfg_;
  std::vector<bool> decay_;
};

SGD::SGD(std::vector<Parameter> params, const SGDConfig& cfg) : Optimizer(std::move(params)), cfg_(cfg) {
  optimizer_detail::check_range(cfg.momentum, 0, 1, false, "momentum");
  optimizer_detail::check_range(cfg.weight_decay, 0, 1e3, false, "weight_decay");
  decay_ = optimizer_detail::decay_mask(params_, cfg.rule);
  if (cfg.momentum != 0) add_buffers("buf");
}

void SGD::step(double lr) {
  NoGrad no_grad;
  ++steps_;
  const real wd = real(cfg_.weight_decay), mom = real(cfg_.momentum), neg_lr = real(-lr);
  const bool has_buf = cfg_.momentum != 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& pt = params_[i].tensor;
    if (!pt.has_grad()) continue;
    const bool first = t_[i]++ == 0;
    const bool decay = decay_[i] && cfg_.weight_decay != 0;
    const real* g = pt.grad().data();
    real* p = pt.mutable_data();
    real* buf = has_buf ? buffers_[0][i].data() : nullptr;
    const std::size_t n = pt.numel();
    for (std::size_t j = 0; j < n; ++j) {
      real d = decay ? g[j] + wd * p[j] : g[j];
      if (has_buf) {
        buf[j] = first ? d : buf[j] * mom + d;
        d = buf[j];
      }
      p[j] = p[j] + neg_lr * d;
    }
  }
}

}  // namespace

PELAB_REGISTER_OPTIMIZER(sgd, OptimizerSpec{
    "sgd",
    "stochastic gradient descent with momentum, L2-style weight decay (torch.optim.SGD)",
    {
        number_param("momentum", 0.9, "0 = plain SGD").in_half_open(0.0, 1.0),
    },
    [](std::vector<Parameter> params, const Params& p, const OptimizerCommon& common) -> std::unique_ptr<Optimizer> {
      SGDConfig c;
      c.momentum = p.get_number("momentum");
      c.weight_decay = common.weight_decay;
      c.rule = common.rule;
      return std::make_unique<SGD>(std::move(params), c);
    },
    [](const Params& p) -> std::size_t { return p.get_number("momentum") != 0 ? 1 : 0; },  // buf
});

}  // namespace pelab
