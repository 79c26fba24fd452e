// Fused cross-entropy: forward and backward side by side, row loops on raw pointers.
#include "core/ops/cross_entropy.hpp"

#include <cmath>
#include <vector>

#include "core/ops/common.hpp"

namespace pelab {

Tensor cross_entropy(const Tensor& logits, const IndexArray& targets, const Array* mask) {
  const char* op = "cross_entropy";
  detail::require_defined(logits, op, "logits");
  const Shape& ls = logits.shape();
  detail::require(ls.size() >= 1, op, "logits need at least 1 dim (..., V), got a 0-d tensor");
  Shape tshape(ls.size() - 1);
  std::copy(ls.begin(), ls.end() - 1, tshape.begin());
  detail::require(targets.shape() == tshape, op,
                  "targets " + shape_str(targets.shape()) + " do not match logits " + shape_str(ls) +
                      " (expected " + shape_str(tshape) + ")");
  if (mask)
    detail::require(mask->shape() == tshape, op,
                    "mask " + shape_str(mask->shape()) + " does not match targets " + shape_str(tshape));

  const std::size_t V = ls.back(), rows = shape_numel(tshape);
  const real* px = logits.data();
  const std::int32_t* pt = targets.data();
  const real* pw = mask ? mask->data() : nullptr;

  // Total weight first (double: many tokens), so the per-row coefficient w / W is known in one pass.
  double W = 0;
  for (std::size_t r = 0, n = shape_only() ? 0 : rows; r < n; ++r) {  // core/shape_only.hpp: no values
    const real w = pw ? pw[r] : real(1);
    if (!(w >= 0) || !std::isfinite(w))
      throw Error(std::string(op) + ": mask weight " + std::to_string(double(w)) + " at flat position " +
                  std::to_string(r) + " is negative or not finite");
    W += double(w);
  }

  // Per counted row: index, target, coefficient w / W and log-sum-exp (what backward needs).
  struct Row {
    std::size_t r;
    std::int32_t t;
    real coef, lse;
  };
  std::vector<Row> counted;
  double loss = 0;
  if (W > 0) {
    counted.reserve(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const real w = pw ? pw[r] : real(1);
      if (w == 0) continue;  // padding: neither target nor logits are read
      const std::int32_t t = pt[r];
      if (t < 0 || static_cast<std::size_t>(t) >= V)
        throw Error(std::string(op) + ": target id " + std::to_string(t) + " at flat position " +
                    std::to_string(r) + " is out of range [0, " + std::to_string(V) + ")");
      const real* xr = px + r * V;
      real m = xr[0];
      for (std::size_t j = 1; j < V; ++j) m = xr[j] > m ? xr[j] : m;
      real s = 0;
      for (std::size_t j = 0; j < V; ++j) s += std::exp(xr[j] - m);
      const real lse = m + std::log(s);
      loss += double(w) * double(lse - xr[t]);
      counted.push_back({r, t, static_cast<real>(double(w) / W), lse});
    }
    loss /= W;
  }

  Tensor out = detail::empty(Shape{});
  if (!shape_only()) out.mutable_data()[0] = static_cast<real>(loss);
  Tape& tape = Tape::current();
  if (tape.should_record({&logits})) {
    tape.record(op, out, {logits}, {logits}, [V, counted = std::move(counted)](const BackwardCtx& c) {
      // Always materialize the gradient, so an all-zero mask yields a zero gradient, not a missing one.
      real* gx = c.grad(0);
      if (shape_only()) return;
      const real* px = c.saved(0);
      const real g0 = c.grad_out().data()[0];
      for (const Row& row : counted) {
        const real* xr = px + row.r * V;
        real* dr = gx + row.r * V;
        const real scale = g0 * row.coef;
        for (std::size_t j = 0; j < V; ++j) dr[j] += scale * std::exp(xr[j] - row.lse);
        dr[row.t] -= scale;
      }
    });
  }
  return out;
}

}  // namespace pelab
