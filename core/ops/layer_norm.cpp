// layer_norm: forward and backward side by side, row loops on raw pointers.
#include "core/ops/layer_norm.hpp"

#include <cmath>

#include "core/ops/common.hpp"
#include "core/ops/kernels.hpp"

namespace pelab {

namespace detail {

void layer_norm_backward(const BackwardCtx& c, std::size_t rows, std::size_t C, const real* mean, const real* rstd) {
  const real* px = c.saved(0);
  const real* pgam = c.saved(1);
  const real* pg = c.grad_out().data();
  real* ggam = c.grad(1);
  real* gbet = c.grad(2);
  bool fresh = false;
  real* gx = c.grad_write(0, fresh);
  if (shape_only()) return;  // gradients allocated, not computed (core/shape_only.hpp)
  if (parallel::pieces(rows, row_grain(C)) <= 1) {  // one pass for everything (the plan, not the threads, decides)
    kernels::layer_norm_backward_rows(px, pg, pgam, mean, rstd, gx, !fresh, ggam, gbet, 0, rows, C);
    return;
  }
  // Split: dx by rows; dgamma and dbeta by columns, each summed over the rows in row order (the same
  // bits as the single pass).
  if (gx)
    for_rows(rows, C, [&](std::size_t r0, std::size_t r1) {
      kernels::layer_norm_backward_rows(px, pg, pgam, mean, rstd, gx, !fresh, nullptr, nullptr, r0, r1, C);
    });
  if (ggam || gbet)
    for_cols(rows, C, [&](std::size_t j0, std::size_t j1) {
      kernels::layer_norm_param_cols(px, pg, mean, rstd, ggam, gbet, rows, C, j0, j1);
    });
}

}  // namespace detail

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
    detail::for_rows(rows, C, [&](std::size_t r0, std::size_t r1) {
      kernels::layer_norm_rows(px, nullptr, nullptr, nullptr, pgam, pbet, py, mean.data(), rstd.data(), r0, r1, C, eps);
    });
  }

  Tape& tape = Tape::current();
  if (tape.should_record({&x, &gamma, &beta})) {
    // dgamma reads x; dx reads x and gamma; dbeta reads neither (beta's value is never kept).
    const Tensor save_x = x.requires_grad() || gamma.requires_grad() ? x : Tensor();
    const Tensor save_gamma = x.requires_grad() ? gamma : Tensor();
    auto backward = [rows, C, mean = std::move(mean), rstd = std::move(rstd)](const BackwardCtx& c) {
      detail::layer_norm_backward(c, rows, C, mean.data(), rstd.data());
    };
    tape.record(op, out, {x, gamma, beta}, {save_x, save_gamma}, std::move(backward));
  }
  return out;
}

}  // namespace pelab
