// reshape / permute / transpose / slice / concat / broadcast_to: forward values against naive index math
// and gradients by central differences.
#include <algorithm>
#include <numeric>

#include "core/ops/shape.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

// Row-major flat index of idx in shape s.
std::size_t flat(const Shape& s, const std::vector<std::size_t>& idx) {
  std::size_t f = 0;
  for (std::size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

// Multi-index of flat position f in shape s.
std::vector<std::size_t> unflat(const Shape& s, std::size_t f) {
  std::vector<std::size_t> idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = f % s[d];
    f /= s[d];
  }
  return idx;
}

// (2, 3) with a dim of size n inserted at position axis.
Shape with_axis(int axis, std::size_t n) {
  Shape s(3);
  for (std::size_t d = 0, k = 0; d < 3; ++d) s[d] = int(d) == axis ? n : (k++ == 0 ? 2 : 3);
  return s;
}

Tensor iota(const Shape& s, bool requires_grad = false) {
  Array a(s);
  std::iota(a.begin(), a.end(), real(0));
  return Tensor(std::move(a), requires_grad);
}

// out[i] = x[j] with j[axes[k]] = i[k].
void check_permute_values(const Tensor& x, const std::vector<int>& axes) {
  INFO("shape " << shape_str(x.shape()) << " axes " << axes[0] << axes[1] << axes[2] << axes[3]);
  Tensor y = permute(x, axes);
  Shape want_shape(axes.size());
  for (std::size_t k = 0; k < axes.size(); ++k) want_shape[k] = x.shape()[axes[k]];
  REQUIRE(y.shape() == want_shape);
  REQUIRE(y.numel() == x.numel());
  bool all_equal = true;
  for (std::size_t f = 0; f < y.numel(); ++f) {
    const auto i = unflat(y.shape(), f);
    std::vector<std::size_t> j(axes.size());
    for (std::size_t k = 0; k < axes.size(); ++k) j[axes[k]] = i[k];
    all_equal = all_equal && y.data()[f] == x.data()[flat(x.shape(), j)];
  }
  CHECK(all_equal);
}

}  // namespace

// ---------------------------------------------------------------- reshape

TEST_CASE("reshape: values and gradient", "[shape][grad]") {
  Tensor x = iota({2, 3, 4});
  Tensor y = reshape(x, {4, 6});
  REQUIRE(y.shape() == Shape{4, 6});
  REQUIRE(y.numel() == 24);
  for (std::size_t i = 0; i < 24; ++i) CHECK(y.data()[i] == real(i));
  CHECK(reshape(x, {24}).shape() == Shape{24});
  CHECK(reshape(Tensor::scalar(3), {1, 1}).shape() == Shape{1, 1});
  Rng rng(1);
  gradcheck([](const std::vector<Tensor>& in) { return reshape(in[0], {3, 2, 4}); }, {randn({2, 3, 4}, rng)});
  gradcheck([](const std::vector<Tensor>& in) { return reshape(in[0], {5}); }, {randn({5, 1}, rng)});
}

TEST_CASE("reshape: numel mismatch names both shapes", "[shape][errors]") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH(reshape(x, {4, 2}), Catch::Contains("reshape") && Catch::Contains("(2, 3)") &&
                                            Catch::Contains("(4, 2)"));
}

// ---------------------------------------------------------------- permute / transpose

TEST_CASE("permute: all 24 permutations of 4 axes match naive index math", "[shape]") {
  std::vector<int> axes = {0, 1, 2, 3};
  const Tensor a = iota({2, 3, 4, 5});
  const Tensor b = iota({3, 1, 2, 4});  // a size-1 dim: dropped from the walk
  int count = 0;
  do {
    check_permute_values(a, axes);
    check_permute_values(b, axes);
    ++count;
  } while (std::next_permutation(axes.begin(), axes.end()));
  CHECK(count == 24);
}

TEST_CASE("permute: gradients for all 24 permutations", "[shape][grad]") {
  std::vector<int> axes = {0, 1, 2, 3};
  Rng rng(2);
  Tensor x = randn({2, 3, 2, 4}, rng);
  do {
    INFO("axes " << axes[0] << axes[1] << axes[2] << axes[3]);
    gradcheck([axes](const std::vector<Tensor>& in) { return permute(in[0], axes); }, {x});
  } while (std::next_permutation(axes.begin(), axes.end()));
}

TEST_CASE("permute: attention head split round trip and negative axes", "[shape][grad]") {
  // (B, T, H, hs) -> (B, H, T, hs) -> back.
  Tensor x = iota({2, 5, 3, 4});
  Tensor heads = permute(x, {0, 2, 1, 3});
  REQUIRE(heads.shape() == Shape{2, 3, 5, 4});
  CHECK(heads.value()(1, 2, 4, 3) == x.value()(1, 4, 2, 3));
  Tensor back = permute(heads, {0, -2, 1, -1});
  REQUIRE(back.shape() == x.shape());
  CHECK(back.value() == x.value());
  // Gradient flows through both permutes.
  Rng rng(3);
  gradcheck([](const std::vector<Tensor>& in) { return permute(permute(in[0], {0, 2, 1, 3}), {0, 2, 1, 3}); },
            {randn({2, 3, 2, 4}, rng)});
  // Low ranks.
  Tensor s = permute(Tensor::scalar(7), {});
  REQUIRE(s.numel() == 1);
  CHECK(s.item() == 7);
  Tensor v = permute(iota({3}), {0});
  CHECK(v.value() == iota({3}).value());
}

TEST_CASE("transpose: values and gradient", "[shape][grad]") {
  Tensor x = iota({2, 3, 4});
  Tensor y = transpose(x, 0, -1);  // (4, 3, 2)
  REQUIRE(y.shape() == Shape{4, 3, 2});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) CHECK(y.value()(k, j, i) == x.value()(i, j, k));
  Tensor m = transpose(iota({2, 3}), 1, 0);
  REQUIRE(m.shape() == Shape{3, 2});
  CHECK(m.value()(2, 1) == 5);
  Rng rng(4);
  gradcheck([](const std::vector<Tensor>& in) { return transpose(in[0], 1, 2); }, {randn({2, 3, 4}, rng)});
  gradcheck([](const std::vector<Tensor>& in) { return transpose(in[0], -1, -2); }, {randn({3, 5}, rng)});
}

TEST_CASE("permute and transpose: bad axes throw naming the op", "[shape][errors]") {
  Tensor x = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH(permute(x, {0, 1}), Catch::Contains("permute") && Catch::Contains("(2, 3, 4)"));
  CHECK_THROWS_WITH(permute(x, {0, 1, 1}), Catch::Contains("permute") && Catch::Contains("not a permutation"));
  CHECK_THROWS_WITH(permute(x, {0, -1, 2}), Catch::Contains("permute") && Catch::Contains("not a permutation"));
  CHECK_THROWS_WITH(permute(x, {0, 1, 3}), Catch::Contains("permute") && Catch::Contains("axis 3"));
  CHECK_THROWS_WITH(transpose(x, 0, 3), Catch::Contains("transpose") && Catch::Contains("axis 3"));
  CHECK_THROWS_WITH(transpose(x, -4, 0), Catch::Contains("transpose") && Catch::Contains("axis -4"));
}

// ---------------------------------------------------------------- slice

TEST_CASE("slice: values along first middle and last axis", "[shape]") {
  Tensor x = iota({3, 4, 5});
  Tensor a = slice(x, 0, 1, 3);
  REQUIRE(a.shape() == Shape{2, 4, 5});
  Tensor b = slice(x, 1, 0, 1);
  REQUIRE(b.shape() == Shape{3, 1, 5});
  Tensor c = slice(x, -1, 2, 5);
  REQUIRE(c.shape() == Shape{3, 4, 3});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      for (std::size_t k = 0; k < 5; ++k) {
        if (i >= 1 && i < 3) CHECK(a.value()(i - 1, j, k) == x.value()(i, j, k));
        if (j < 1) CHECK(b.value()(i, j, k) == x.value()(i, j, k));
        if (k >= 2) CHECK(c.value()(i, j, k - 2) == x.value()(i, j, k));
      }
  Tensor full = slice(x, 1, 0, 4);
  CHECK(full.value() == x.value());
  Tensor empty = slice(x, 2, 3, 3);
  CHECK(empty.shape() == Shape{3, 4, 0});
  CHECK(empty.numel() == 0);
}

TEST_CASE("slice: gradients at the edges", "[shape][grad]") {
  Rng rng(5);
  Tensor x = randn({3, 4, 5}, rng);
  struct Case { int axis; std::size_t start, stop; };
  const std::vector<Case> cases = {{0, 0, 1}, {0, 2, 3}, {0, 0, 3}, {1, 0, 2}, {1, 3, 4}, {1, 1, 3},
                                   {2, 0, 1}, {2, 4, 5}, {-1, 1, 4}, {2, 0, 5}};
  for (const auto& c : cases) {
    INFO("axis " << c.axis << " [" << c.start << ", " << c.stop << ")");
    gradcheck([c](const std::vector<Tensor>& in) { return slice(in[0], c.axis, c.start, c.stop); }, {x});
  }
  // Unused elements get exactly zero gradient.
  x.zero_grad();
  Tensor y = slice(x, 1, 1, 3);
  y.backward(xt::ones<real>(y.shape()));
  REQUIRE(x.grad().shape() == x.shape());
  CHECK(x.grad()(2, 0, 4) == 0);
  CHECK(x.grad()(2, 3, 0) == 0);
  CHECK(x.grad()(2, 1, 4) == 1);
}

TEST_CASE("slice: bad range throws naming the op", "[shape][errors]") {
  Tensor x = Tensor::zeros({2, 4});
  CHECK_THROWS_WITH(slice(x, 1, 2, 5), Catch::Contains("slice") && Catch::Contains("[2, 5)") &&
                                           Catch::Contains("(2, 4)"));
  CHECK_THROWS_WITH(slice(x, 1, 3, 2), Catch::Contains("slice") && Catch::Contains("[3, 2)"));
  CHECK_THROWS_WITH(slice(x, 2, 0, 1), Catch::Contains("slice") && Catch::Contains("axis 2"));
}

// ---------------------------------------------------------------- concat

TEST_CASE("concat: values along first middle and last axis of 3 tensors", "[shape]") {
  for (int axis = 0; axis < 3; ++axis) {
    INFO("axis " << axis);
    // Lengths 1, 3, 2 along the concat axis; the other dims are (2, 3) in order.
    std::vector<Tensor> xs;
    const std::size_t lens[3] = {1, 3, 2};
    real base = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      Tensor t = iota(with_axis(axis, lens[k]));
      t.mutable_value() += base;
      base += 100;
      xs.push_back(t);
    }
    Tensor y = concat(xs, axis);
    REQUIRE(y.shape() == with_axis(axis, 6));
    bool ok = true;
    for (std::size_t f = 0; f < y.numel(); ++f) {
      auto i = unflat(y.shape(), f);
      std::size_t k = 0, pos = i[axis];
      while (pos >= lens[k]) pos -= lens[k++];
      i[axis] = pos;
      ok = ok && y.data()[f] == xs[k].data()[flat(xs[k].shape(), i)];
    }
    CHECK(ok);
  }
  // A single input is copied.
  Tensor one = concat({iota({2, 2})}, -1);
  CHECK(one.value() == iota({2, 2}).value());
}

TEST_CASE("concat: gradients along every axis", "[shape][grad]") {
  Rng rng(6);
  for (int axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    const std::size_t ax = axis < 0 ? 2 : axis;
    std::vector<Tensor> xs;
    for (std::size_t len : {2, 1, 3}) {
      Shape s = {2, 3, 4};
      s[ax] = len;
      xs.push_back(randn(s, rng));
    }
    gradcheck([axis](const std::vector<Tensor>& in) { return concat(in, axis); }, xs);
  }
  // An input that does not require grad is skipped; the others still get theirs.
  Tensor a = randn({2, 3}, rng), b = randn({2, 2}, rng, 1.0, false);
  gradcheck([b](const std::vector<Tensor>& in) { return concat({in[0], b, in[0]}, 1); }, {a});
  CHECK_FALSE(b.has_grad());
}

TEST_CASE("concat: mismatched inputs throw naming the op", "[shape][errors]") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 3}), c = Tensor::zeros({2, 3, 1});
  CHECK_THROWS_WITH(concat({a, b}, 1), Catch::Contains("concat") && Catch::Contains("(3, 3)") &&
                                           Catch::Contains("(2, 3)"));
  CHECK_NOTHROW(concat({a, b}, 0));
  CHECK_THROWS_WITH(concat({a, c}, 0), Catch::Contains("concat") && Catch::Contains("(2, 3, 1)"));
  CHECK_THROWS_WITH(concat({}, 0), Catch::Contains("concat"));
  CHECK_THROWS_WITH(concat({a, Tensor()}, 0), Catch::Contains("concat") && Catch::Contains("undefined"));
  CHECK_THROWS_WITH(concat({a, a}, 2), Catch::Contains("concat") && Catch::Contains("axis 2"));
}

// ---------------------------------------------------------------- broadcast_to

TEST_CASE("broadcast_to: values against naive index math", "[shape]") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {2, 3, 4}},        // leading
      {{2, 1, 4}, {2, 3, 4}},     // middle
      {{3, 1}, {2, 3, 4}},        // leading + trailing
      {{1, 3, 1}, {2, 3, 4}},     // both ends
      {{}, {2, 3}},               // scalar
      {{1}, {5}},                 // one element
      {{2, 3}, {2, 3}},           // identity
      {{2, 1, 3, 1}, {2, 4, 3, 5}},
  };
  for (const auto& [from, to] : cases) {
    INFO(shape_str(from) << " -> " << shape_str(to));
    Tensor x = iota(from);
    Tensor y = broadcast_to(x, to);
    REQUIRE(y.shape() == to);
    bool ok = true;
    for (std::size_t f = 0; f < y.numel(); ++f) {
      const auto i = unflat(to, f);
      std::vector<std::size_t> j(from.size());
      for (std::size_t d = 0; d < from.size(); ++d) {
        const std::size_t dt = d + to.size() - from.size();
        j[d] = from[d] == 1 ? 0 : i[dt];
      }
      ok = ok && y.data()[f] == x.data()[flat(from, j)];
    }
    CHECK(ok);
  }
}

TEST_CASE("broadcast_to: gradients sum over broadcast axes", "[shape][grad]") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {2, 3, 4}}, {{2, 1, 4}, {2, 3, 4}}, {{1, 3, 1}, {2, 3, 4}},
      {{}, {2, 3}},        {{3, 1}, {2, 3, 4}},    {{2, 1, 3, 1}, {2, 4, 3, 5}},
  };
  Rng rng(7);
  for (const auto& [from, to] : cases) {
    INFO(shape_str(from) << " -> " << shape_str(to));
    gradcheck([to = to](const std::vector<Tensor>& in) { return broadcast_to(in[0], to); }, {randn(from, rng)});
  }
  // Leading broadcast of ones: each element's gradient is the number of copies.
  Tensor x = Tensor::zeros({3, 1}, true);
  Tensor y = broadcast_to(x, {2, 3, 4});
  y.backward(xt::ones<real>(y.shape()));
  REQUIRE(x.grad().size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(x.grad().data()[i] == 8);
}

TEST_CASE("broadcast_to: incompatible shapes throw naming the op", "[shape][errors]") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH(broadcast_to(x, {4, 3}), Catch::Contains("broadcast_to") && Catch::Contains("(2, 3)") &&
                                                 Catch::Contains("(4, 3)"));
  CHECK_THROWS_WITH(broadcast_to(x, {3}), Catch::Contains("broadcast_to"));
  CHECK_THROWS_WITH(broadcast_to(x, {2, 3, 3}), Catch::Contains("broadcast_to"));
}
