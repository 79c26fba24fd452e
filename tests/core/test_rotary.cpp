// rotary: values against the rotation formula for both layouts, norm preservation, gradients.
#include <cmath>

#include "core/ops/rotary.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {
IndexArray positions(std::size_t B, std::size_t T, int offset_per_row) {
  IndexArray p(Shape{B, T});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) p(b, t) = static_cast<int>(t) + offset_per_row * static_cast<int>(b);
  return p;
}
}  // namespace

TEST_CASE("rotary matches the rotation formula in both layouts, partial rotation passes dims through", "[rotary]") {
  Rng rng(3);
  const std::size_t B = 2, H = 2, T = 4, hs = 6;
  Tensor x = randn({B, H, T, hs}, rng, 1, false);
  const IndexArray pos = positions(B, T, 7);
  for (std::size_t rot : {std::size_t(6), std::size_t(4)})
    for (auto layout : {RotaryLayout::interleaved, RotaryLayout::half}) {
      auto tb = std::make_shared<RotaryTables>(rotary_tables(pos, rot, 100.0));
      Tensor y = rotary(x, tb, layout);
      REQUIRE(y.shape() == x.shape());
      const std::size_t P = rot / 2;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t i = 0; i < P; ++i) {
              const double a = pos(b, t) * std::pow(100.0, -2.0 * i / rot);
              const std::size_t i1 = layout == RotaryLayout::interleaved ? 2 * i : i;
              const std::size_t i2 = layout == RotaryLayout::interleaved ? 2 * i + 1 : i + P;
              const double x1 = x.value()(b, h, t, i1), x2 = x.value()(b, h, t, i2);
              CHECK(y.value()(b, h, t, i1) == Approx(x1 * std::cos(a) - x2 * std::sin(a)).margin(1e-12));
              CHECK(y.value()(b, h, t, i2) == Approx(x1 * std::sin(a) + x2 * std::cos(a)).margin(1e-12));
            }
            for (std::size_t d = rot; d < hs; ++d) CHECK(y.value()(b, h, t, d) == x.value()(b, h, t, d));
          }
    }
}

TEST_CASE("rotary gradients for both layouts and partial rotation", "[rotary][grad]") {
  Rng rng(4);
  const IndexArray pos = positions(2, 5, 3);
  Tensor x = randn({2, 3, 5, 8}, rng);
  for (std::size_t rot : {std::size_t(8), std::size_t(4)})
    for (auto layout : {RotaryLayout::interleaved, RotaryLayout::half}) {
      auto tb = std::make_shared<RotaryTables>(rotary_tables(pos, rot, 10000.0));
      gradcheck([&](const std::vector<Tensor>& in) { return rotary(in[0], tb, layout); }, {x});
    }
}

TEST_CASE("rotary errors", "[rotary][errors]") {
  const IndexArray pos = positions(2, 5, 0);
  CHECK_THROWS_WITH(rotary_tables(pos, 3, 10000.0), Catch::Contains("even"));
  auto tb = std::make_shared<RotaryTables>(rotary_tables(pos, 8, 10000.0));
  CHECK_THROWS_WITH(rotary(Tensor::zeros({2, 3, 4, 8}), tb, RotaryLayout::half), Catch::Contains("rotary"));
  CHECK_THROWS_WITH(rotary(Tensor::zeros({2, 3, 5, 6}), tb, RotaryLayout::half), Catch::Contains("head size"));
}
