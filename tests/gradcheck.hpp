// Gradient checking against central finite differences, in double precision.
//
// Gradient tests link pelab_core_f64: the engine's own sources compiled with real = double, so the
// analytic backward under test is the real code, and differences of the real forward are taken in
// double (eps 1e-6 gives ~1e-10 accuracy). For an f with output y, we seed backward with a fixed random
// R (so every output element carries a distinct weight) and compare d<R, f(x)>/dx elementwise.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/rng.hpp"
#include "core/tape.hpp"
#include "core/tensor.hpp"

namespace pelab::test {

static_assert(sizeof(real) == 8, "gradient checks must link pelab_core_f64 (double)");

inline Tensor randn(const Shape& shape, Rng& rng, double scale = 1.0, bool requires_grad = true) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(rng.normal() * scale);
  return Tensor(std::move(a), requires_grad);
}

inline Tensor uniform(const Shape& shape, Rng& rng, double lo, double hi, bool requires_grad = true) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(lo + (hi - lo) * rng.uniform());
  return Tensor(std::move(a), requires_grad);
}

struct GradcheckResult {
  double worst_abs = 0, worst_rel = 0;
  std::string where;
  std::size_t checked = 0;
};

// Compares the analytic gradient of every input that requires grad with central differences.
// Fails the enclosing test (with the worst element named) when |a - n| > atol + rtol * |n|.
inline GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                 std::vector<Tensor> inputs, double atol = 1e-6, double rtol = 1e-5,
                                 double eps = 1e-6, std::uint64_t seed = 1234) {
  Tape::current().clear();
  for (auto& x : inputs) x.zero_grad();
  Tensor y = f(inputs);
  REQUIRE(y.defined());
  REQUIRE(y.numel() > 0);
  Rng rng(seed);
  Array R(y.shape());
  for (auto& v : R) v = static_cast<real>(rng.normal());
  auto weighted = [&](const Tensor& out) {
    REQUIRE(out.numel() == R.size());
    double s = 0;
    for (std::size_t i = 0; i < R.size(); ++i) s += double(out.data()[i]) * double(R.data()[i]);
    return s;
  };
  y.backward(R);

  GradcheckResult res;
  bool failed = false;
  std::ostringstream msg;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    REQUIRE(x.has_grad());
    const Array analytic = x.grad();
    REQUIRE(analytic.size() == x.numel());
    REQUIRE(analytic.size() > 0);
    for (std::size_t i = 0; i < x.numel(); ++i) {
      double numeric;
      {
        NoGrad ng;
        const real orig = x.data()[i];
        x.impl()->value.data()[i] = orig + eps;  // direct write: no version bump needed under NoGrad
        const double fp = weighted(f(inputs));
        x.impl()->value.data()[i] = orig - eps;
        const double fm = weighted(f(inputs));
        x.impl()->value.data()[i] = orig;
        numeric = (fp - fm) / (2 * eps);
      }
      const double a = analytic.data()[i];
      const double err = std::abs(a - numeric);
      const double rel = err / std::max(std::abs(numeric), 1e-12);
      ++res.checked;
      if (err > res.worst_abs) {
        res.worst_abs = err;
        std::ostringstream w;
        w << "input " << k << " element " << i << ": analytic " << a << " numeric " << numeric;
        res.where = w.str();
      }
      if (err > 1e-9) res.worst_rel = std::max(res.worst_rel, rel);
      if (err > atol + rtol * std::abs(numeric) && !failed) {
        failed = true;
        msg << "gradient mismatch at input " << k << " (shape " << shape_str(x.shape()) << ") element " << i
            << ": analytic " << a << ", numeric " << numeric;
      }
    }
  }
  INFO("worst abs error " << res.worst_abs << " at " << res.where);
  INFO(msg.str());
  CHECK(!failed);
  CHECK(res.checked > 0);
  return res;
}

}  // namespace pelab::test
