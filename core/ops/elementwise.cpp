// add / sub / mul / div, maximum / minimum and pow with broadcasting, and scalar forms. Forward and
// backward side by side.
#include "core/ops/elementwise.hpp"

#include <cmath>

#include "core/ops/common.hpp"

namespace pelab {

namespace {

// Which operand values a partial derivative reads: a bit set of kA, kB.
constexpr unsigned kA = 1, kB = 2;

// One implementation for the four binary ops: Fwd computes y from (a, b); GradA / GradB give
// dy/da and dy/db at (a, b), reading only the operands named by DaReads / DbReads (the others are
// passed as 0). Backward accumulates g * dy/da into a's grad at the broadcast index, which is exactly
// the sum over broadcast axes.
template <unsigned DaReads, unsigned DbReads, class Fwd, class GradA, class GradB>
Tensor binary(const char* op, const Tensor& a, const Tensor& b, Fwd fwd, GradA da, GradB db) {
  detail::require_defined(a, op, "a");
  detail::require_defined(b, op, "b");
  const Shape out_shape = detail::broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = detail::empty(out_shape);
  const bool same = a.shape() == b.shape();  // no broadcasting: the common case, split over threads
  {
    const real* pa = a.data();
    const real* pb = b.data();
    real* po = out.mutable_data();
    if (same)
      detail::for_rows(out.numel(), 1, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) po[i] = fwd(pa[i], pb[i]);
      });
    else
      detail::for_each_broadcast(out_shape, a.shape(), b.shape(),
                                 [&](std::size_t i, std::size_t ia, std::size_t ib) { po[i] = fwd(pa[ia], pb[ib]); });
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&a, &b})) {
    // Save only the values the needed derivatives read: add / sub none, mul(x, const) only const.
    const unsigned reads = (a.requires_grad() ? DaReads : 0) | (b.requires_grad() ? DbReads : 0);
    auto backward = [a_shape = a.shape(), b_shape = b.shape(), out_shape, same, da, db](const BackwardCtx& c) {
      const real* pa = c.saved(0);  // nullptr when not read
      const real* pb = c.saved(1);
      const real* pg = c.grad_out().data();
      auto value = [](const real* p, std::size_t i) { return p ? p[i] : real(0); };
      if (same) {  // each input's gradient written whole (into a fresh buffer) or added, split over threads
        const std::size_t n = shape_numel(out_shape);
        bool fresh = false;
        if (real* ga = c.grad_write(0, fresh))
          detail::for_rows(n, 1, [&, fresh](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) {
              const real v = pg[i] * da(value(pa, i), value(pb, i));
              ga[i] = fresh ? v : ga[i] + v;
            }
          });
        if (real* gb = c.grad_write(1, fresh))
          detail::for_rows(n, 1, [&, fresh](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) {
              const real v = pg[i] * db(value(pa, i), value(pb, i));
              gb[i] = fresh ? v : gb[i] + v;
            }
          });
        return;
      }
      if (real* ga = c.grad(0))
        detail::for_each_broadcast(out_shape, a_shape, b_shape, [&](std::size_t i, std::size_t ia, std::size_t ib) {
          ga[ia] += pg[i] * da(value(pa, ia), value(pb, ib));
        });
      if (real* gb = c.grad(1))
        detail::for_each_broadcast(out_shape, a_shape, b_shape, [&](std::size_t i, std::size_t ia, std::size_t ib) {
          gb[ib] += pg[i] * db(value(pa, ia), value(pb, ib));
        });
    };
    tape.record(op, out, {a, b}, {reads & kA ? a : Tensor(), reads & kB ? b : Tensor()}, std::move(backward));
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary<0, 0>("add", a, b, [](real x, real y) { return x + y; }, [](real, real) { return real(1); },
                [](real, real) { return real(1); });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  return binary<0, 0>("sub", a, b, [](real x, real y) { return x - y; }, [](real, real) { return real(1); },
                [](real, real) { return real(-1); });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return binary<kB, kA>("mul", a, b, [](real x, real y) { return x * y; }, [](real, real y) { return y; },
                [](real x, real) { return x; });
}

Tensor div(const Tensor& a, const Tensor& b) {
  return binary<kB, kA | kB>("div", a, b, [](real x, real y) { return x / y; }, [](real, real y) { return real(1) / y; },
                [](real x, real y) { return -x / (y * y); });
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary<kA | kB, kA | kB>(
      "maximum", a, b, [](real x, real y) { return x != x || y != y ? x + y : x > y ? x : y; },
      [](real x, real y) { return x == y ? real(0.5) : x < y ? real(0) : real(1); },
      [](real x, real y) { return x == y ? real(0.5) : x > y ? real(0) : real(1); });
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary<kA | kB, kA | kB>(
      "minimum", a, b, [](real x, real y) { return x != x || y != y ? x + y : x < y ? x : y; },
      [](real x, real y) { return x == y ? real(0.5) : x > y ? real(0) : real(1); },
      [](real x, real y) { return x == y ? real(0.5) : x < y ? real(0) : real(1); });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  return binary<kA | kB, kA | kB>(
      "pow", a, b, [](real x, real y) { return std::pow(x, y); },
      [](real x, real y) { return y == 0 ? real(0) : y * std::pow(x, y - 1); },
      [](real x, real y) { return x == 0 && y >= 0 ? real(0) : std::pow(x, y) * std::log(x); });
}

Tensor add_scalar(const Tensor& a, real s) {
  detail::require_defined(a, "add_scalar", "a");
  Tensor out = detail::empty(a.shape());
  const real* pa = a.data();
  real* po = out.mutable_data();
  const std::size_t n = shape_only() ? 0 : a.numel();  // core/shape_only.hpp
  for (std::size_t i = 0; i < n; ++i) po[i] = pa[i] + s;
  Tape& tape = Tape::current();
  if (tape.should_record({&a})) {
    tape.record("add_scalar", out, {a}, {}, [](const BackwardCtx& c) {
      real* ga = c.grad(0);
      const real* pg = c.grad_out().data();
      for (std::size_t i = 0, n = shape_only() ? 0 : c.grad_out().size(); i < n; ++i) ga[i] += pg[i];
    });
  }
  return out;
}

Tensor mul_scalar(const Tensor& a, real s) {
  detail::require_defined(a, "mul_scalar", "a");
  Tensor out = detail::empty(a.shape());
  const real* pa = a.data();
  real* po = out.mutable_data();
  const std::size_t n = shape_only() ? 0 : a.numel();
  for (std::size_t i = 0; i < n; ++i) po[i] = pa[i] * s;
  Tape& tape = Tape::current();
  if (tape.should_record({&a})) {
    tape.record("mul_scalar", out, {a}, {}, [s](const BackwardCtx& c) {
      real* ga = c.grad(0);
      const real* pg = c.grad_out().data();
      for (std::size_t i = 0, n = shape_only() ? 0 : c.grad_out().size(); i < n; ++i) ga[i] += pg[i] * s;
    });
  }
  return out;
}

}  // namespace pelab
