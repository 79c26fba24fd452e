// learned_rotary (layers/positional/learned_rotation.hpp, GRAPE-M's commuting rotation with learned omega):
// gradients to x and to omega against central differences in double; its value is the rotary op's.
#include <cmath>
#include <vector>

#include "gradcheck.hpp"
#include "layers/positional/learned_rotation.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {
std::vector<double> values(const Tensor& t) { return std::vector<double>(t.data(), t.data() + t.numel()); }

IndexArray ids(std::size_t B, std::size_t T) {  // rows with their own ids, some far out
  IndexArray p(Shape{B, T});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) p(b, t) = static_cast<std::int32_t>(b == 0 ? t : 40 + 3 * t);
  return p;
}
}  // namespace

TEST_CASE("learned_rotary: gradients to x and omega, shared or per-head omega, both layouts", "[learned_rotation]") {
  Rng rng(11);
  const std::size_t B = 2, H = 3, T = 4, hs = 6;
  const IndexArray pos = ids(B, T);
  for (std::size_t Hf : {std::size_t(1), H})
    for (auto layout : {RotaryLayout::half, RotaryLayout::interleaved}) {
      INFO("Hf " << Hf << " layout " << int(layout));
      Tensor x = randn({B, H, T, hs}, rng);
      Tensor omega = randn({Hf, hs / 2}, rng, 0.3);
      gradcheck([&](const std::vector<Tensor>& in) {
        return learned_rotary(in[0], pos, in[1], learned_rotary_tables(pos, values(in[1]), Hf), layout);
      }, {x, omega}, 1e-6, 1e-5);
    }
}

TEST_CASE("learned_rotary's value is the rotation by p * omega, whether omega needs a gradient or not",
          "[learned_rotation]") {
  Rng rng(12);
  const std::size_t B = 2, H = 2, T = 5, hs = 4;
  const IndexArray pos = ids(B, T);
  const Tensor x = randn({B, H, T, hs}, rng, 1, false);
  for (bool grad : {false, true}) {
    const Tensor omega = randn({H, hs / 2}, rng, 0.5, grad);
    const auto tb = learned_rotary_tables(pos, values(omega), H);
    const Tensor y = learned_rotary(x, pos, omega, tb, RotaryLayout::half);
    double worst = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t i = 0; i < hs / 2; ++i) {
            const double a = double(pos(b, t)) * double(omega.data()[h * hs / 2 + i]);
            const real* xr = x.data() + ((b * H + h) * T + t) * hs;
            const real* yr = y.data() + ((b * H + h) * T + t) * hs;
            worst = std::max({worst, std::abs(yr[i] - (xr[i] * std::cos(a) - xr[i + hs / 2] * std::sin(a))),
                              std::abs(yr[i + hs / 2] - (xr[i] * std::sin(a) + xr[i + hs / 2] * std::cos(a)))});
          }
    CHECK(worst < 1e-12);
  }
  Tape::current().clear();
}
