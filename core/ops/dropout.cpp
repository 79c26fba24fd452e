// dropout: forward (draw mask, scale) and backward (same mask) side by side.
#include "core/ops/dropout.hpp"

#include "core/ops/common.hpp"

namespace pelab {

Tensor dropout(const Tensor& x, real p, Rng& rng, bool training) {
  const char* op = "dropout";
  detail::require_defined(x, op, "x");
  detail::require(p >= real(0) && p < real(1), op, "p = " + std::to_string(p) + " is outside [0, 1)");
  if (!training || p == real(0)) return x;
  // mask holds 0 or 1 / (1 - p): forward and backward both just multiply by it.
  const real scale = real(1) / (real(1) - p);
  const double pd = static_cast<double>(p);
  Array mask(x.shape());
  Tensor out = detail::empty(x.shape());
  {
    const real* px = x.data();
    real* pm = mask.data();
    real* po = out.mutable_data();
    // Shape-only (core/shape_only.hpp): no draw, so the stream is where a real run would find it.
    for (std::size_t i = 0, n = shape_only() ? 0 : x.numel(); i < n; ++i) {
      pm[i] = rng.uniform() < pd ? real(0) : scale;
      po[i] = px[i] * pm[i];
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [mask = std::move(mask)](const BackwardCtx& c) {
      real* gx = c.grad(0);
      const real* pg = c.grad_out().data();
      const real* pm = mask.data();
      for (std::size_t i = 0, n = shape_only() ? 0 : mask.size(); i < n; ++i) gx[i] += pg[i] * pm[i];
    });
  }
  return out;
}

}  // namespace pelab
