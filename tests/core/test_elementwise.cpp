// add / sub / mul / div: broadcasting forward values and gradients (reduction over broadcast axes).
#include "core/ops/elementwise.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;
using pelab::test::uniform;

namespace {
using BinFn = Tensor (*)(const Tensor&, const Tensor&);
const std::vector<std::pair<const char*, BinFn>> kOps = {{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}};
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
      Tensor a = randn(sa, rng);
      // keep divisors away from zero
      Tensor b = std::string(name) == "div" ? uniform(sb, rng, 0.5, 2.0) : randn(sb, rng);
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
