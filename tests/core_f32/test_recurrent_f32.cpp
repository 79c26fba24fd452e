// gru and lstm in float32: the gates' fast sigmoid and tanh (fast_math's exp) against libm in double
// over saturating pre-activations, and a repeated forward and backward takes no new memory from the
// system (every buffer, per step or per call, comes back from the caching allocator). The float
// gradients are matched against PyTorch by the recurrent parity fixtures (tests/layers/test_parity.cpp).
#include <catch2/catch.hpp>

#include "core/allocator.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/recurrent.hpp"
#include "core/ops/reduce.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"
#include <cmath>
#include <vector>

using namespace pelab;

// A loop without memory::begin_step: every size class stays current, so nothing is evicted (the reuse rule,
// core/allocator.hpp). Under the rule it replaced this gave back and re-obtained 2 blocks every step in the
// sanitized build (56 -> 76 system allocations over these 10 steps).
TEST_CASE("gru and lstm forward and backward stop allocating from the system after warm-up",
          "[allocator][recurrent]") {
  const std::size_t B = 4, T = 16, I = 8, H = 8;
  Tensor x = Tensor::full({B, T, I}, 0.3f, true), h0 = Tensor::full({B, H}, 0.1f, true);
  Tensor gw_ih = Tensor::full({3 * H, I}, 0.05f, true), gw_hh = Tensor::full({3 * H, H}, -0.05f, true);
  Tensor lw_ih = Tensor::full({4 * H, I}, 0.05f, true), lw_hh = Tensor::full({4 * H, H}, -0.05f, true);
  Tensor b = Tensor::full({3 * H}, 0.01f, true), lb = Tensor::full({4 * H}, 0.01f, true);
  auto step = [&] {
    Tensor y = sum(gru(x, h0, gw_ih, gw_hh, b, b)) + sum(lstm(x, h0, h0, lw_ih, lw_hh, lb, lb));
    y.backward();
    for (Tensor* t : {&x, &h0, &gw_ih, &gw_hh, &lw_ih, &lw_hh, &b, &lb}) t->zero_grad();
  };
  for (int i = 0; i < 3; ++i) step();  // warm up
  const auto before = memory::stats();
  for (int i = 0; i < 10; ++i) step();
  const auto after = memory::stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.cache_hits > before.cache_hits);
}

namespace {
double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }
}  // namespace

TEST_CASE("float gru and lstm match the equations in double with libm, saturated gates included", "[recurrent]") {
  // Small pre-activations first (tanh's series branch, where 1 - e^(-2|v|) would cancel), then large ones.
  for (double scale : {0.02, 8.0}) {
  INFO("inputs of scale " << scale);
  // One unit per gate and one input: weights large enough that pre-activations reach +-40.
  const std::size_t T = 60;
  Rng rng(3);
  Array xs(Shape{1, T, 1});
  for (auto& v : xs) v = static_cast<real>(scale * rng.normal());
  const Tensor x(xs);
  const std::vector<real> wg = {1.5f, -2.0f, 2.5f}, wl = {1.5f, -2.0f, 2.5f, 3.0f};
  const Tensor gy = gru(x, Tensor(), Tensor::from({3, 1}, wg), Tensor::from({3, 1}, {0.7f, -0.4f, 1.1f}), Tensor(), Tensor());
  const Tensor ly = lstm(x, Tensor(), Tensor(), Tensor::from({4, 1}, wl), Tensor::from({4, 1}, {0.7f, -0.4f, 1.1f, 0.9f}),
                         Tensor(), Tensor());
  double h = 0, worst_g = 0, hl = 0, c = 0, worst_l = 0;
  for (std::size_t t = 0; t < T; ++t) {
    const double v = xs(0, t, 0);
    const double r = sig(1.5 * v + 0.7 * h), z = sig(-2.0 * v - 0.4 * h), n = std::tanh(2.5 * v + r * 1.1 * h);
    h = (1 - z) * n + z * h;
    worst_g = std::max(worst_g, std::abs(h - double(gy.data()[t])));
    const double i = sig(1.5 * v + 0.7 * hl), f = sig(-2.0 * v - 0.4 * hl), g = std::tanh(2.5 * v + 1.1 * hl),
                 o = sig(3.0 * v + 0.9 * hl);
    c = f * c + i * g;
    hl = o * std::tanh(c);
    worst_l = std::max(worst_l, std::abs(hl - double(ly.data()[t])));
  }
  INFO("worst |float - double|: gru " << worst_g << ", lstm " << worst_l);
  // Relative to the scale of h: the small inputs keep h near 0.02.
  const double tol = scale < 1 ? 2e-8 : 1e-6;
  CHECK(worst_g < tol);
  CHECK(worst_l < tol);
  }
}
