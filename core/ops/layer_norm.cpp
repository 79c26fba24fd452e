// layer_norm: forward and backward side by side, row loops on raw pointers.
#include "core/ops/layer_norm.hpp"

#include <cmath>

#include "core/ops/common.hpp"

namespace pelab {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, real eps) {
  const char* op = "layer_norm";
  detail::require_defined(x, op, "x");
  detail::require_defined(gamma, op, "gamma");
  detail::require(x.ndim() >= 1, op, "x needs at least 1 dim (..., C), got a 0-d tensor");
  const std::size_t C = x.shape().back();
  detail::require(gamma.shape() == Shape{C}, op,
                  "gamma " + shape_str(gamma.shape()) + " does not match x " + shape_str(x.shape()) +
                      " (expected " + shape_str(Shape{C}) + ")");
  if (beta.defined())
    detail::require(beta.shape() == Shape{C}, op,
                    "beta " + shape_str(beta.shape()) + " does not match x " + shape_str(x.shape()) +
                        " (expected " + shape_str(Shape{C}) + ")");
  detail::require(eps >= 0 && std::isfinite(eps), op, "eps must be finite and >= 0, got " + std::to_string(double(eps)));
  const std::size_t rows = C ? x.numel() / C : 0;

  Tensor out = detail::empty(x.shape());
  Array mean(Shape{rows}), rstd(Shape{rows});  // (rows,) saved for backward
  {
    const real* px = x.data();
    const real* pgam = gamma.data();
    const real* pbet = beta.defined() ? beta.data() : nullptr;
    real* py = out.mutable_data();
    real* pm = mean.data();
    real* pr = rstd.data();
    for (std::size_t r = 0; r < rows; ++r) {
      const real* xr = px + r * C;
      real* yr = py + r * C;
      // Two passes with double accumulators: no cancellation from E[x^2] - E[x]^2.
      double s = 0;
      for (std::size_t j = 0; j < C; ++j) s += xr[j];
      const double mu = s / double(C);
      double v = 0;
      for (std::size_t j = 0; j < C; ++j) {
        const double d = double(xr[j]) - mu;
        v += d * d;
      }
      const real m = static_cast<real>(mu);
      const real rs = static_cast<real>(1.0 / std::sqrt(v / double(C) + double(eps)));
      pm[r] = m;
      pr[r] = rs;
      if (pbet)
        for (std::size_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * rs * pgam[j] + pbet[j];
      else
        for (std::size_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * rs * pgam[j];
    }
  }

  Tape& tape = Tape::current();
  if (tape.should_record({&x, &gamma, &beta})) {
    // dgamma reads x; dx reads x and gamma; dbeta reads neither (beta's value is never kept).
    const Tensor save_x = x.requires_grad() || gamma.requires_grad() ? x : Tensor();
    const Tensor save_gamma = x.requires_grad() ? gamma : Tensor();
    auto backward = [rows, C, mean = std::move(mean), rstd = std::move(rstd)](const BackwardCtx& c) {
      const real* px = c.saved(0);
      const real* pgam = c.saved(1);
      const real* pg = c.grad_out().data();
      const real* pm = mean.data();
      const real* pr = rstd.data();
      real* gx = c.grad(0);
      real* ggam = c.grad(1);
      real* gbet = c.grad(2);
      const real invC = real(1) / static_cast<real>(C);
      for (std::size_t r = 0; r < rows; ++r) {
        const real* xr = px ? px + r * C : nullptr;  // read only for dgamma and dx
        const real* gr = pg + r * C;
        const real m = pm[r], rs = pr[r];
        if (ggam)
          for (std::size_t j = 0; j < C; ++j) ggam[j] += gr[j] * (xr[j] - m) * rs;
        if (gbet)
          for (std::size_t j = 0; j < C; ++j) gbet[j] += gr[j];
        if (gx) {
          // With xhat = (x - mean) * rstd and dxhat = g * gamma:
          // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
          real sd = 0, sdx = 0;
          for (std::size_t j = 0; j < C; ++j) {
            const real dxh = gr[j] * pgam[j];
            sd += dxh;
            sdx += dxh * (xr[j] - m) * rs;
          }
          sd *= invC;
          sdx *= invC;
          real* dr = gx + r * C;
          for (std::size_t j = 0; j < C; ++j)
            dr[j] += rs * (gr[j] * pgam[j] - sd - (xr[j] - m) * rs * sdx);
        }
      }
    };
    tape.record(op, out, {x, gamma, beta}, {save_x, save_gamma}, std::move(backward));
  }
  return out;
}

}  // namespace pelab
