// sum / mean / max: forward values against naive multi-index loops over every axis subset (1-D..4-D,
// non-square, with size-1 axes), keepdims both ways, gradients, ties, and error cases.
#include <cmath>
#include <limits>

#include "core/ops/elementwise.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/unary.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

// Multi-index of flat index i in shape s.
std::vector<std::size_t> unravel(std::size_t i, const Shape& s) {
  std::vector<std::size_t> idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

// Naive reference: flat output index of each input element, then plain accumulation in double.
struct Naive {
  Shape out_shape;
  std::vector<double> sum;
  std::size_t count = 1;
};
Naive naive_sum(const Tensor& x, const std::vector<std::size_t>& axes, bool keepdims) {
  const Shape& s = x.shape();
  std::vector<bool> red(s.size(), false);
  for (auto a : axes) red[a] = true;
  Naive n;
  Shape kept;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (red[d]) n.count *= s[d];
    if (!red[d]) kept.push_back(s[d]);
    if (!red[d] || keepdims) n.out_shape.push_back(red[d] ? 1 : s[d]);
  }
  n.sum.assign(shape_numel(kept), 0.0);
  for (std::size_t i = 0; i < x.numel(); ++i) {
    auto idx = unravel(i, s);
    std::size_t o = 0;
    for (std::size_t d = 0; d < s.size(); ++d)
      if (!red[d]) o = o * s[d] + idx[d];
    n.sum[o] += x.data()[i];
  }
  return n;
}

std::vector<std::vector<std::size_t>> subsets(std::size_t nd) {
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t m = 0; m < (std::size_t(1) << nd); ++m) {
    std::vector<std::size_t> s;
    for (std::size_t d = 0; d < nd; ++d)
      if (m >> d & 1) s.push_back(d);
    out.push_back(s);
  }
  return out;
}

// The axes as ints, every other one written negatively, in reverse order (order must not matter).
std::vector<int> as_axes(const std::vector<std::size_t>& axes, std::size_t nd, bool negative) {
  std::vector<int> out;
  for (std::size_t k = axes.size(); k-- > 0;) {
    const int a = static_cast<int>(axes[k]);
    out.push_back(negative && k % 2 == 0 ? a - static_cast<int>(nd) : a);
  }
  return out;
}

const std::vector<Shape> kShapes = {{5}, {3, 4}, {4, 1}, {2, 3, 4}, {3, 1, 5}, {2, 3, 4, 5}, {2, 1, 3, 2}};

}  // namespace

TEST_CASE("sum and mean match naive loops over every axis subset", "[reduce]") {
  Rng rng(21);
  for (auto& shape : kShapes) {
    Tensor x = randn(shape, rng, 1, false);
    for (auto& ax : subsets(shape.size()))
      for (bool keep : {false, true})
        for (bool negative : {false, true}) {
          const std::vector<int> axes = as_axes(ax, shape.size(), negative);
          std::string desc;
          for (int a : axes) desc += std::to_string(a) + " ";
          INFO("shape " << shape_str(shape) << " axes " << desc << " keepdims " << keep);
          const Naive n = naive_sum(x, ax, keep);
          Tensor s = sum(x, axes, keep), m = mean(x, axes, keep);
          REQUIRE(s.shape() == n.out_shape);
          REQUIRE(m.shape() == n.out_shape);
          REQUIRE(s.numel() == n.sum.size());
          for (std::size_t i = 0; i < n.sum.size(); ++i) {
            CHECK(s.data()[i] == Approx(n.sum[i]).epsilon(1e-12).margin(1e-12));
            CHECK(m.data()[i] == Approx(n.sum[i] / double(n.count)).epsilon(1e-12).margin(1e-12));
          }
        }
  }
}

TEST_CASE("sum and mean gradients over every axis subset", "[reduce][grad]") {
  Rng rng(22);
  for (auto& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 2}, Shape{3, 2, 4, 2}}) {
    Tensor x = randn(shape, rng);
    for (auto& ax : subsets(shape.size()))
      for (bool keep : {false, true}) {
        const std::vector<int> axes = as_axes(ax, shape.size(), true);
        INFO("shape " << shape_str(shape) << " " << ax.size() << " axes, keepdims " << keep);
        auto rs = gradcheck([&](const std::vector<Tensor>& in) { return sum(in[0], axes, keep); }, {x});
        auto rm = gradcheck([&](const std::vector<Tensor>& in) { return mean(in[0], axes, keep); }, {x});
        CHECK(rs.checked == x.numel());
        CHECK(rm.checked == x.numel());
      }
  }
}

TEST_CASE("sum and mean over all elements", "[reduce][grad]") {
  Tensor x = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6.5});
  Tensor s = sum(x), m = mean(x);
  CHECK(s.shape() == Shape{});
  CHECK(m.shape() == Shape{});
  CHECK(s.item() == 21.5);
  CHECK(m.item() == Approx(21.5 / 6).epsilon(1e-15));
  // 0-d input: its own sum.
  CHECK(sum(Tensor::scalar(2.5)).item() == 2.5);
  CHECK(mean(Tensor::scalar(2.5)).item() == 2.5);
  CHECK(sum(Tensor::scalar(2.5), {}).shape() == Shape{});
  Rng rng(23);
  Tensor y = randn({3, 1, 4}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return sum(in[0]); }, {y});
  gradcheck([](const std::vector<Tensor>& in) { return mean(in[0]); }, {y});
  // mean's gradient is exactly 1 / count.
  Tensor z = Tensor::zeros({2, 4}, true);
  mean(z).backward();
  REQUIRE(z.grad().size() == 8);
  for (std::size_t i = 0; i < 8; ++i) CHECK(z.grad().data()[i] == 0.125);
}

TEST_CASE("sum with an empty axis list is a copy", "[reduce][grad]") {
  Tensor x = Tensor::from({2, 2}, {1, 2, 3, 4}, true);
  Tensor y = sum(x, {});
  REQUIRE(y.shape() == x.shape());
  for (std::size_t i = 0; i < 4; ++i) CHECK(y.data()[i] == x.data()[i]);
  gradcheck([](const std::vector<Tensor>& in) { return mean(in[0], {}, true); }, {x});
}

TEST_CASE("reductions over empty tensors", "[reduce]") {
  Tensor e = Tensor::zeros({2, 0, 3});
  Tensor s = sum(e, {1});
  REQUIRE(s.shape() == Shape{2, 3});
  for (std::size_t i = 0; i < s.numel(); ++i) CHECK(s.data()[i] == 0);
  CHECK(sum(e).item() == 0);
  CHECK(std::isnan(mean(e).item()));  // 0 / 0, as in PyTorch
  CHECK(sum(e, {0, 2}).shape() == Shape{0});
  CHECK(sum(e, {0, 2}, true).shape() == Shape{1, 0, 1});
  CHECK(max(e, 2).shape() == Shape{2, 0});
}

TEST_CASE("sum over leading axes of (B, T, C) and over the last axis", "[reduce][grad]") {
  // The two hot patterns: bias gradients (axes {0, 1} -> (C)) and row sums (axis -1).
  Rng rng(24);
  Tensor x = randn({3, 5, 7}, rng);
  Tensor b = sum(x, {0, 1});
  REQUIRE(b.shape() == Shape{7});
  for (std::size_t c = 0; c < 7; ++c) {
    double want = 0;
    for (std::size_t i = 0; i < 15; ++i) want += x.data()[i * 7 + c];
    CHECK(b.data()[c] == Approx(want).epsilon(1e-13));
  }
  Tensor r = sum(x, {-1}, true);
  REQUIRE(r.shape() == Shape{3, 5, 1});
  for (std::size_t i = 0; i < 15; ++i) {
    double want = 0;
    for (std::size_t c = 0; c < 7; ++c) want += x.data()[i * 7 + c];
    CHECK(r.data()[i] == Approx(want).epsilon(1e-13));
  }
  // Composition: a reduced gradient flowing into another op and back.
  gradcheck([](const std::vector<Tensor>& in) { return sum(square(in[0]), {0, 1}) * max(in[0], 1); }, {x});
  gradcheck([](const std::vector<Tensor>& in) { return sum(square(in[0]), {0, 2}) * mean(in[0], {-1, 0}); },
            {x});
}

TEST_CASE("max values match naive loops on every axis", "[reduce]") {
  Rng rng(25);
  for (auto& shape : kShapes) {
    Tensor x = randn(shape, rng, 1, false);
    const int nd = static_cast<int>(shape.size());
    for (int axis = -nd; axis < nd; ++axis)
      for (bool keep : {false, true}) {
        INFO("shape " << shape_str(shape) << " axis " << axis << " keepdims " << keep);
        const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + nd : axis);
        Shape want_shape;
        for (std::size_t d = 0; d < shape.size(); ++d)
          if (d != a || keep) want_shape.push_back(d == a ? 1 : shape[d]);
        Tensor m = max(x, axis, keep);
        REQUIRE(m.shape() == want_shape);
        std::vector<double> want(m.numel(), -std::numeric_limits<double>::infinity());
        for (std::size_t i = 0; i < x.numel(); ++i) {
          auto idx = unravel(i, shape);
          std::size_t o = 0;
          for (std::size_t d = 0; d < shape.size(); ++d)
            if (d != a) o = o * shape[d] + idx[d];
          want[o] = std::max(want[o], double(x.data()[i]));
        }
        REQUIRE(m.numel() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) CHECK(m.data()[i] == want[i]);
      }
  }
}

TEST_CASE("max gradients on every axis", "[reduce][grad]") {
  Rng rng(26);
  for (auto& shape : {Shape{6}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 2}}) {
    Tensor x = randn(shape, rng);  // continuous values: no ties
    const int nd = static_cast<int>(shape.size());
    for (int axis = -nd; axis < nd; ++axis)
      for (bool keep : {false, true}) {
        INFO("shape " << shape_str(shape) << " axis " << axis << " keepdims " << keep);
        gradcheck([&](const std::vector<Tensor>& in) { return max(in[0], axis, keep); }, {x});
      }
  }
}

TEST_CASE("max with ties sends the gradient to the first maximum only", "[reduce][grad]") {
  // (2, 3, 2): ties along every axis.
  const std::vector<real> v = {1, 5, 3, 5, 3, 0,  //
                               3, 5, 2, 5, 3, 5};
  SECTION("last axis") {
    Tensor x = Tensor::from({2, 6}, v, true);
    Tensor m = max(x, 1);
    REQUIRE(m.numel() == 2);
    CHECK(m.data()[0] == 5);
    CHECK(m.data()[1] == 5);
    m.backward(Tensor::from({2}, {10, 20}).value());
    const std::vector<real> want = {0, 10, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0};
    REQUIRE(x.grad().size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(x.grad().data()[i] == want[i]);
  }
  SECTION("middle axis") {
    Tensor x = Tensor::from({2, 3, 2}, v, true);
    Tensor m = max(x, 1, true);
    REQUIRE(m.shape() == Shape{2, 1, 2});
    const std::vector<real> want_m = {3, 5, 3, 5};
    for (std::size_t i = 0; i < 4; ++i) CHECK(m.data()[i] == want_m[i]);
    m.backward(Tensor::from({2, 1, 2}, {1, 2, 3, 4}).value());
    // Column (0, :, 1) = 5, 5, 0 -> index 0; (1, :, 0) = 3, 2, 3 -> index 0; (1, :, 1) = 5, 5, 5 -> 0.
    const std::vector<real> want = {0, 2, 1, 0, 0, 0, 3, 4, 0, 0, 0, 0};
    REQUIRE(x.grad().size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(x.grad().data()[i] == want[i]);
  }
  SECTION("first axis") {
    Tensor x = Tensor::from({2, 6}, v, true);
    Tensor m = max(x, 0);
    const std::vector<real> want_m = {3, 5, 3, 5, 3, 5};
    REQUIRE(m.numel() == want_m.size());
    for (std::size_t i = 0; i < 6; ++i) CHECK(m.data()[i] == want_m[i]);
    m.backward(xt::ones<real>({6}));
    const std::vector<real> want = {0, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1};
    REQUIRE(x.grad().size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(x.grad().data()[i] == want[i]);
  }
}

TEST_CASE("max propagates nan and handles infinities", "[reduce]") {
  const real nan = std::numeric_limits<real>::quiet_NaN(), inf = std::numeric_limits<real>::infinity();
  Tensor x = Tensor::from({3, 3}, {1, nan, 7, -inf, -inf, -inf, nan, 2, nan}, true);
  Tensor m = max(x, -1);
  REQUIRE(m.numel() == 3);
  CHECK(std::isnan(m.data()[0]));
  CHECK(m.data()[1] == -inf);
  CHECK(std::isnan(m.data()[2]));
  m.backward(xt::ones<real>({3}));
  const std::vector<real> want = {0, 1, 0, 1, 0, 0, 1, 0, 0};
  REQUIRE(x.grad().size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(x.grad().data()[i] == want[i]);
}

TEST_CASE("reductions accumulate into an existing gradient", "[reduce][grad]") {
  Tensor x = Tensor::from({2, 2}, {1, 4, 3, 2}, true);
  (sum(x) + max(x, 0) * 2.0 + mean(x, {1})).backward(xt::ones<real>({2}));
  // d sum = 2 (seed summed over the 2 outputs of the broadcast add), d max = 2 at argmax per column,
  // d mean over axis 1 = 1/2.
  const std::vector<real> want = {2.5, 4.5, 4.5, 2.5};
  REQUIRE(x.grad().size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(x.grad().data()[i] == want[i]);
}

TEST_CASE("reductions: bad axes throw naming the op", "[reduce][errors]") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH(sum(x, {2}), Catch::Contains("sum") && Catch::Contains("axis 2 out of range"));
  CHECK_THROWS_WITH(sum(x, {-3}), Catch::Contains("sum") && Catch::Contains("axis -3"));
  CHECK_THROWS_WITH(sum(x, {0, 0}), Catch::Contains("sum") && Catch::Contains("twice"));
  CHECK_THROWS_WITH(sum(x, {1, -1}), Catch::Contains("sum") && Catch::Contains("twice"));
  CHECK_THROWS_WITH(mean(x, {0, 5}), Catch::Contains("mean") && Catch::Contains("axis 5"));
  CHECK_THROWS_WITH(mean(x, {-2, 0}, true), Catch::Contains("mean") && Catch::Contains("twice"));
  CHECK_THROWS_WITH(max(x, 2), Catch::Contains("max") && Catch::Contains("axis 2 out of range"));
  CHECK_THROWS_WITH(max(x, -3), Catch::Contains("max"));
  CHECK_THROWS_WITH(max(Tensor::scalar(1), 0), Catch::Contains("max") && Catch::Contains("0-d"));
  CHECK_THROWS_WITH(max(Tensor::zeros({2, 0}), 1), Catch::Contains("max") && Catch::Contains("size 0"));
  CHECK_THROWS_WITH(sum(Tensor()), Catch::Contains("sum"));
  CHECK_THROWS_WITH(mean(Tensor(), {0}), Catch::Contains("mean"));
  CHECK_THROWS_WITH(max(Tensor(), 0), Catch::Contains("max"));
}
