// add / sub / mul / div / maximum / minimum / pow: broadcasting forward values and gradients (reduction over broadcast axes).
#include <cmath>
#include <limits>

#include "core/ops/elementwise.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;
using pelab::test::uniform;

namespace {
using BinFn = Tensor (*)(const Tensor&, const Tensor&);
const std::vector<std::pair<const char*, BinFn>> kOps = {{"add", add},         {"sub", sub},         {"mul", mul},
                                                         {"div", div},         {"maximum", maximum}, {"minimum", minimum},
                                                         {"pow", pelab::pow}};
}  // namespace

TEST_CASE("binary ops: gradients under every broadcasting pattern", "[elementwise][grad]") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {3, 4}},        // equal
      {{3, 4}, {4}},           // trailing suffix (bias)
      {{4}, {3, 4}},           // suffix on the left
      {{3, 4}, {}},            // scalar
      {{2, 3, 4}, {3, 1}},     // middle broadcast (general path)
      {{2, 1, 4}, {1, 3, 1}},  // both sides broadcast
      {{1}, {2, 3}},           // one-element
      {{2, 3, 1}, {2, 1, 5}},
  };
  Rng rng(7);
  for (auto& [name, fn] : kOps)
    for (auto& [sa, sb] : cases) {
      INFO(name << " " << shape_str(sa) << " with " << shape_str(sb));
      // keep divisors away from zero, and pow's bases positive (its exponent gradient takes log a)
      const std::string n = name;
      Tensor a = n == "pow" ? uniform(sa, rng, 0.3, 2.0) : randn(sa, rng);
      Tensor b = n == "div" ? uniform(sb, rng, 0.5, 2.0) : randn(sb, rng);
      gradcheck([fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, {a, b});
    }
}

TEST_CASE("binary ops: broadcast forward values", "[elementwise]") {
  Tensor a = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor col = Tensor::from({2, 1}, {10, 20});
  Tensor y = add(a, col);
  REQUIRE(y.shape() == Shape{2, 3});
  const std::vector<real> want = {11, 12, 13, 24, 25, 26};
  REQUIRE(y.numel() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y.data()[i] == want[i]);
  Tensor z = div(a, Tensor::scalar(2));
  CHECK(z.data()[5] == 3);
}

TEST_CASE("binary ops: same tensor on both sides accumulates both gradients", "[elementwise][grad]") {
  Tensor x = Tensor::from({3}, {1, 2, 3}, true);
  Tensor y = mul(x, x);
  y.backward(xt::ones<real>({3}));
  REQUIRE(x.grad().size() == 3);
  CHECK(x.grad()(0) == 2);
  CHECK(x.grad()(2) == 6);
}

TEST_CASE("scalar forms", "[elementwise][grad]") {
  Rng rng(8);
  Tensor a = randn({3, 2}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return add_scalar(in[0], 1.5); }, {a});
  gradcheck([](const std::vector<Tensor>& in) { return mul_scalar(in[0], -2.5); }, {a});
  gradcheck([](const std::vector<Tensor>& in) { return (in[0] * 3.0 - 1.0) / 2.0; }, {a});
}

TEST_CASE("binary ops: incompatible shapes throw naming the op", "[elementwise][errors]") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4});
  for (auto& [name, fn] : kOps) CHECK_THROWS_WITH(fn(a, b), Catch::Contains(name) && Catch::Contains("(2, 3)"));
}

TEST_CASE("maximum / minimum: values, nan, and PyTorch's half-and-half gradient on ties", "[elementwise][grad]") {
  const real nan = std::numeric_limits<real>::quiet_NaN();
  Tensor a = Tensor::from({5}, {1, 2, 3, nan, 1}, true), b = Tensor::from({5}, {1, 3, 2, 1, nan}, true);
  {
    NoGrad ng;
    Tensor mx = maximum(a, b), mn = minimum(a, b);
    REQUIRE(mx.numel() == 5);
    REQUIRE(mn.numel() == 5);
    CHECK(mx.data()[0] == 1);
    CHECK(mx.data()[1] == 3);
    CHECK(mx.data()[2] == 3);
    CHECK(mn.data()[1] == 2);
    CHECK(mn.data()[2] == 2);
    for (std::size_t i : {3, 4}) {
      CHECK(std::isnan(mx.data()[i]));
      CHECK(std::isnan(mn.data()[i]));
    }
  }
  // torch 1.13: maximum's grads (0.5, 0, 1, 1, 1) and (0.5, 1, 0, 1, 1); minimum's mirrored
  maximum(a, b).backward(xt::ones<real>({5}));
  const std::vector<real> ga = {0.5, 0, 1, 1, 1}, gb = {0.5, 1, 0, 1, 1};
  REQUIRE(a.grad().size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(a.grad()(i) == ga[i]);
    CHECK(b.grad()(i) == gb[i]);
  }
  a.zero_grad();
  b.zero_grad();
  minimum(a, b).backward(xt::ones<real>({5}));
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(a.grad()(i) == gb[i]);
    CHECK(b.grad()(i) == ga[i]);
  }
  // Broadcast ties: each tie sends half to the broadcast side, summed (torch: b.grad = (1, 1.5)).
  Tensor m = Tensor::from({2, 2}, {1, 2, 1, 0}, true), row = Tensor::from({2}, {1, 2}, true);
  maximum(m, row).backward(xt::ones<real>({2, 2}));
  REQUIRE(row.grad().size() == 2);
  CHECK(row.grad()(0) == 1);
  CHECK(row.grad()(1) == real(1.5));
  CHECK(m.grad()(1, 1) == 0);
}

TEST_CASE("pow: PyTorch's gradients at zero base and zero exponent", "[elementwise][grad]") {
  // torch 1.13, float64: a = (0, 0, 2, 0), b = (0, 1.5, 0, -1)
  Tensor a = Tensor::from({4}, {0, 0, 2, 0}, true), b = Tensor::from({4}, {0, 1.5, 0, -1}, true);
  Tensor y = pelab::pow(a, b);
  REQUIRE(y.numel() == 4);
  CHECK(y.data()[0] == 1);
  CHECK(y.data()[1] == 0);
  CHECK(y.data()[2] == 1);
  CHECK(std::isinf(y.data()[3]));
  y.backward(xt::ones<real>({4}));
  REQUIRE(a.grad().size() == 4);
  CHECK(a.grad()(0) == 0);  // b = 0: 0, not 0 * 0^-1
  CHECK(a.grad()(1) == 0);
  CHECK(a.grad()(2) == 0);
  CHECK(std::isinf(a.grad()(3)));
  CHECK(a.grad()(3) < 0);
  CHECK(b.grad()(0) == 0);  // a = 0, b >= 0: 0, not 1 * log 0
  CHECK(b.grad()(1) == 0);
  CHECK(b.grad()(2) == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(std::isinf(b.grad()(3)));
}
