// linear_gelu (the MLP's fused first layer) against gelu(linear(...)) and central differences.
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/unary.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("linear_gelu equals gelu(linear(x, w, b)): values and every gradient", "[linear_gelu]") {
  Rng rng(11);
  for (bool with_bias : {true, false}) {
    Tensor x = randn({3, 5, 7}, rng), w = randn({9, 7}, rng, 0.5);
    Tensor b = with_bias ? randn({9}, rng) : Tensor();
    Tensor g = randn({3, 5, 9}, rng, 1, false);
    Tensor y1 = linear_gelu(x, w, b);
    y1.backward(g.value());
    const Array dx1 = x.grad(), dw1 = w.grad();
    const Array db1 = with_bias ? b.grad() : Array();
    x.zero_grad();
    w.zero_grad();
    if (with_bias) b.zero_grad();
    Tensor y2 = gelu(linear(x, w, b));
    y2.backward(g.value());
    REQUIRE(y1.shape() == y2.shape());
    for (std::size_t i = 0; i < y1.numel(); ++i) CHECK(y1.data()[i] == Approx(y2.data()[i]).epsilon(1e-14).margin(1e-15));
    auto same = [](const Array& a, const Array& e) {
      REQUIRE(a.shape() == e.shape());
      for (std::size_t i = 0; i < a.size(); ++i) CHECK(a.data()[i] == Approx(e.data()[i]).epsilon(1e-13).margin(1e-14));
    };
    same(dx1, x.grad());
    same(dw1, w.grad());
    if (with_bias) same(db1, b.grad());
  }
}

TEST_CASE("linear_gelu gradients by central differences", "[linear_gelu][grad]") {
  Rng rng(12);
  Tensor x = randn({4, 6}, rng), w = randn({5, 6}, rng, 0.5), b = randn({5}, rng);
  auto r = gradcheck([](const std::vector<Tensor>& in) { return linear_gelu(in[0], in[1], in[2]); }, {x, w, b});
  CHECK(r.checked == x.numel() + w.numel() + b.numel());
}

TEST_CASE("gradients written into fresh buffers still accumulate with other uses", "[linear_gelu][grad]") {
  // x feeds linear_gelu, linear and an add with itself: the first writer finds a fresh buffer, the
  // others must add to it (and add(x, x) writes then adds into one buffer).
  Rng rng(13);
  Tensor x = randn({4, 6}, rng), w = randn({5, 6}, rng, 0.5), v = randn({5, 6}, rng, 0.5);
  gradcheck(
      [](const std::vector<Tensor>& in) {
        return add(add(linear_gelu(in[0], in[1]), linear(in[0], in[2])), linear(add(in[0], in[0]), in[1]));
      },
      {x, w, v});
}
