// A test-only optimizer, one file as any optimizer (training/optimizers/): signum, the sign of a
// momentum buffer (Bernstein et al. 2018, "signSGD", arXiv:1802.04434), registered as "signum" with
// [train.signum] beta. Only test_plugins links it (tests/CMakeLists.txt).
#include "core/tape.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab {

namespace {

// buf = beta buf + (1 - beta) g; p -= lr (sign(buf) + wd p) (wd on decaying parameters only).
class Signum : public Optimizer {
 public:
  Signum(std::vector<Parameter> params, double beta, const OptimizerCommon& common)
      : Optimizer(std::move(params)), beta_(beta), weight_decay_(common.weight_decay) {
    decay_ = optimizer_detail::decay_mask(params_, common.rule);
    add_buffers("buf");
  }
  const char* kind() const override { return "signum"; }

  void step(double lr) override {
    NoGrad no_grad;
    ++steps_;
    const real beta = real(beta_), omb = real(1 - beta_), wd = real(weight_decay_), neg_lr = real(-lr);
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Tensor& pt = params_[i].tensor;
      if (!pt.has_grad()) continue;
      ++t_[i];
      const real* g = pt.grad().data();
      real* p = pt.mutable_data();
      real* buf = buffers_[0][i].data();
      for (std::size_t j = 0; j < pt.numel(); ++j) {
        buf[j] = beta * buf[j] + omb * g[j];
        const real sign = buf[j] > 0 ? real(1) : buf[j] < 0 ? real(-1) : real(0);
        p[j] = p[j] + neg_lr * (sign + (decay_[i] ? wd * p[j] : real(0)));
      }
    }
  }

 private:
  double beta_, weight_decay_;
  std::vector<bool> decay_;
};

}  // namespace

PELAB_REGISTER_OPTIMIZER(signum, OptimizerSpec{
    "signum",
    "sign of momentum (a test plugin)",
    {
        number_param("beta", 0.9, "decay of the gradient mean").in_half_open(0.0, 1.0),
    },
    [](std::vector<Parameter> params, const Params& p, const OptimizerCommon& common) -> std::unique_ptr<Optimizer> {
      return std::make_unique<Signum>(std::move(params), p.get_number("beta"), common);
    },
    [](const Params&) -> std::size_t { return 1; },  // the momentum buffer, for the memory estimate
});

}  // namespace pelab
