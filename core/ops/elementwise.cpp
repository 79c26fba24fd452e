// add / sub / mul / div with broadcasting, and scalar forms. Forward and backward side by side.
#include "core/ops/elementwise.hpp"

#include "core/ops/common.hpp"

namespace pelab {

namespace {

// One implementation for the four binary ops: Fwd computes y from (a, b); GradA / GradB give
// dy/da and dy/db at (a, b). Backward accumulates g * dy/da into a's grad at the broadcast index,
// which is exactly the sum over broadcast axes.
template <bool kNeedsValues, class Fwd, class GradA, class GradB>
Tensor binary(const char* op, const Tensor& a, const Tensor& b, Fwd fwd, GradA da, GradB db) {
  detail::require_defined(a, op, "a");
  detail::require_defined(b, op, "b");
  const Shape out_shape = detail::broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = detail::empty(out_shape);
  {
    const real* pa = a.data();
    const real* pb = b.data();
    real* po = out.mutable_data();
    detail::for_each_broadcast(out_shape, a.shape(), b.shape(),
                               [&](std::size_t i, std::size_t ia, std::size_t ib) { po[i] = fwd(pa[ia], pb[ib]); });
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&a, &b})) {
    // add / sub backward reads only the gradient: hold a and b as gradient targets, not values.
    auto backward = [ag = GradRef(a), bg = GradRef(b), a = kNeedsValues ? a : Tensor(),
                     b = kNeedsValues ? b : Tensor(), out_shape, da, db](const Array& g) {
      const real* pa = kNeedsValues ? a.data() : nullptr;
      const real* pb = kNeedsValues ? b.data() : nullptr;
      const real* pg = g.data();
      auto value = [](const real* p, std::size_t i) { return p ? p[i] : real(0); };
      if (ag.requires_grad()) {
        real* ga = grad_buffer(*ag.impl()).data();
        detail::for_each_broadcast(out_shape, ag.shape(), bg.shape(), [&](std::size_t i, std::size_t ia, std::size_t ib) {
          ga[ia] += pg[i] * da(value(pa, ia), value(pb, ib));
        });
      }
      if (bg.requires_grad()) {
        real* gb = grad_buffer(*bg.impl()).data();
        detail::for_each_broadcast(out_shape, ag.shape(), bg.shape(), [&](std::size_t i, std::size_t ia, std::size_t ib) {
          gb[ib] += pg[i] * db(value(pa, ia), value(pb, ib));
        });
      }
    };
    tape.record(op, out, kNeedsValues ? std::vector<Tensor>{a, b} : std::vector<Tensor>{}, std::move(backward));
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary<false>("add", a, b, [](real x, real y) { return x + y; }, [](real, real) { return real(1); },
                [](real, real) { return real(1); });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  return binary<false>("sub", a, b, [](real x, real y) { return x - y; }, [](real, real) { return real(1); },
                [](real, real) { return real(-1); });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return binary<true>("mul", a, b, [](real x, real y) { return x * y; }, [](real, real y) { return y; },
                [](real x, real) { return x; });
}

Tensor div(const Tensor& a, const Tensor& b) {
  return binary<true>("div", a, b, [](real x, real y) { return x / y; }, [](real, real y) { return real(1) / y; },
                [](real x, real y) { return -x / (y * y); });
}

Tensor add_scalar(const Tensor& a, real s) {
  detail::require_defined(a, "add_scalar", "a");
  Tensor out = detail::empty(a.shape());
  const real* pa = a.data();
  real* po = out.mutable_data();
  const std::size_t n = a.numel();
  for (std::size_t i = 0; i < n; ++i) po[i] = pa[i] + s;
  Tape& tape = Tape::current();
  if (tape.should_record({&a})) {
    tape.record("add_scalar", out, {}, [ag = GradRef(a)](const Array& g) {
      real* ga = grad_buffer(*ag.impl()).data();
      const real* pg = g.data();
      for (std::size_t i = 0, n = g.size(); i < n; ++i) ga[i] += pg[i];
    });
  }
  return out;
}

Tensor mul_scalar(const Tensor& a, real s) {
  detail::require_defined(a, "mul_scalar", "a");
  Tensor out = detail::empty(a.shape());
  const real* pa = a.data();
  real* po = out.mutable_data();
  const std::size_t n = a.numel();
  for (std::size_t i = 0; i < n; ++i) po[i] = pa[i] * s;
  Tape& tape = Tape::current();
  if (tape.should_record({&a})) {
    tape.record("mul_scalar", out, {}, [ag = GradRef(a), s](const Array& g) {
      real* ga = grad_buffer(*ag.impl()).data();
      const real* pg = g.data();
      for (std::size_t i = 0, n = g.size(); i < n; ++i) ga[i] += pg[i] * s;
    });
  }
  return out;
}

}  // namespace pelab
