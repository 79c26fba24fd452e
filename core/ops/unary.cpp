// Unary elementwise ops: forward and backward side by side, all through one template.
#include "core/ops/unary.hpp"

#include <cmath>

#include "core/ops/common.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/fast_math.hpp"

namespace pelab {

namespace {

// What the derivative is computed from; the op saves only that tensor for backward.
enum class From { input, output };

// y = f(x) elementwise. Backward accumulates g * d(v) into x's grad, where v is x (From::input) or y
// (From::output).
template <From S, class Fwd, class Deriv>
Tensor unary(const char* op, const Tensor& x, Fwd f, Deriv d) {
  detail::require_defined(x, op, "x");
  Tensor out = detail::empty(x.shape());
  if (!shape_only()) {  // core/shape_only.hpp
    const real* px = x.data();
    real* po = out.mutable_data();
    for (std::size_t i = 0, n = x.numel(); i < n; ++i) po[i] = f(px[i]);
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {S == From::input ? x : out}, [d](const BackwardCtx& c) {
      real* gx = c.grad(0);
      if (shape_only()) return;
      const real* pg = c.grad_out().data();
      const real* pv = c.saved(0);
      for (std::size_t i = 0, n = c.grad_out().size(); i < n; ++i) gx[i] += pg[i] * d(pv[i]);
    });
  }
  return out;
}

constexpr double kInvSqrt2 = 0.70710678118654752440;      // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;    // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;   // sqrt(2 / pi)
constexpr double kGeluCoef = 0.044715;

}  // namespace

// A composite: x * -1 is -x exactly (a nan may keep its sign bit), and its backward g * -1 is neg's.
Tensor neg(const Tensor& x) {
  detail::require_defined(x, "neg", "x");
  return mul_scalar(x, real(-1));
}

Tensor exp(const Tensor& x) {
  return unary<From::output>("exp", x, [](real v) { return std::exp(v); }, [](real y) { return y; });
}

Tensor log(const Tensor& x) {
  return unary<From::input>("log", x, [](real v) { return std::log(v); }, [](real v) { return real(1) / v; });
}

Tensor log1p(const Tensor& x) {
  return unary<From::input>("log1p", x, [](real v) { return std::log1p(v); },
                            [](real v) { return real(1) / (real(1) + v); });
}

Tensor sqrt(const Tensor& x) {
  return unary<From::output>("sqrt", x, [](real v) { return std::sqrt(v); },
                             [](real y) { return real(0.5) / y; });
}

Tensor tanh(const Tensor& x) {
  return unary<From::output>("tanh", x, [](real v) { return std::tanh(v); },
                             [](real y) { return real(1) - y * y; });
}

Tensor sin(const Tensor& x) {
  return unary<From::input>("sin", x, [](real v) { return std::sin(v); }, [](real v) { return std::cos(v); });
}

Tensor cos(const Tensor& x) {
  return unary<From::input>("cos", x, [](real v) { return std::cos(v); }, [](real v) { return -std::sin(v); });
}

Tensor sigmoid(const Tensor& x) {
  // exp of a non-positive argument only: no overflow, and no 1 - tiny cancellation for x << 0.
  return unary<From::output>(
      "sigmoid", x,
      [](real v) {
        if (v >= 0) return real(1) / (real(1) + std::exp(-v));
        const real e = std::exp(v);
        return e / (real(1) + e);
      },
      [](real y) { return y * (real(1) - y); });
}

Tensor relu(const Tensor& x) {
  return unary<From::output>("relu", x, [](real v) { return v > 0 ? v : real(0); },
                             [](real y) { return y > 0 ? real(1) : real(0); });
}

Tensor gelu(const Tensor& x) {
  return unary<From::input>(
      "gelu", x, [](real v) { return real(0.5) * v * (real(1) + detail::erf_fast(v * real(kInvSqrt2))); },
      // Phi(x) + x phi(x)
      [](real v) {
        return real(0.5) * (real(1) + detail::erf_fast(v * real(kInvSqrt2))) +
               v * real(kInvSqrt2Pi) * detail::exp_nonpos(real(-0.5) * v * v);
      });
}

Tensor gelu_tanh(const Tensor& x) {
  return unary<From::input>(
      "gelu_tanh", x,
      [](real v) {
        const real u = real(kSqrt2OverPi) * (v + real(kGeluCoef) * v * v * v);
        return real(0.5) * v * (real(1) + std::tanh(u));
      },
      [](real v) {
        const real u = real(kSqrt2OverPi) * (v + real(kGeluCoef) * v * v * v);
        const real t = std::tanh(u);
        const real du = real(kSqrt2OverPi) * (real(1) + real(3 * kGeluCoef) * v * v);
        return real(0.5) * (real(1) + t) + real(0.5) * v * (real(1) - t * t) * du;
      });
}

Tensor square(const Tensor& x) {
  return unary<From::input>("square", x, [](real v) { return v * v; }, [](real v) { return real(2) * v; });
}

Tensor abs(const Tensor& x) {
  return unary<From::input>("abs", x, [](real v) { return std::abs(v); },
                            [](real v) { return real((v > 0) - (v < 0)); });
}

Tensor clamp(const Tensor& x, real lo, real hi) {
  detail::require(lo <= hi, "clamp",
                  "needs lo <= hi (and no nan bound), got lo " + std::to_string(lo) + ", hi " + std::to_string(hi));
  // nan stays nan (neither comparison holds) and gets gradient 0.
  return unary<From::input>(
      "clamp", x, [lo, hi](real v) { return v < lo ? lo : v > hi ? hi : v; },
      [lo, hi](real v) { return v >= lo && v <= hi ? real(1) : real(0); });
}

Tensor softplus(const Tensor& x, real beta, real threshold) {
  detail::require(beta != 0, "softplus", "beta must be nonzero");
  // Past the threshold log1p(e^bx) / b equals x to working precision (and e^bx could overflow).
  return unary<From::input>(
      "softplus", x,
      [beta, threshold](real v) { return beta * v > threshold ? v : std::log1p(std::exp(beta * v)) / beta; },
      [beta, threshold](real v) {
        if (beta * v > threshold) return real(1);
        const real z = std::exp(beta * v);
        return z / (z + real(1));
      });
}

}  // namespace pelab
