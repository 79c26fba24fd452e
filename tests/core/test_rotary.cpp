// rotary: values against the rotation formula for both layouts, norm preservation, gradients.
#include <cmath>

#include "core/ops/elementwise.hpp"
#include "core/ops/heads.hpp"
#include "core/ops/rotary.hpp"
#include "core/ops/shape.hpp"
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

namespace {
// rotary_qkv's reference: split q, k, v off the projection, rotate q and k as rotary() does, put back.
Tensor split_rotate_merge(const Tensor& qkv, std::size_t H, std::shared_ptr<const RotaryTables> tq,
                          std::shared_ptr<const RotaryTables> tk, RotaryLayout layout) {
  const Tensor q = rotary(split_heads(qkv, H, 3, 0), tq, layout), k = rotary(split_heads(qkv, H, 3, 1), tk, layout);
  return concat({merge_heads(q), merge_heads(k), merge_heads(split_heads(qkv, H, 3, 2))}, 2);  // (B, T, 3C)
}
}  // namespace

TEST_CASE("rotary_qkv: the split-rotate-merge result bit for bit, values and gradient, both layouts, two tables",
          "[rotary]") {
  Rng rng(8);
  const std::size_t B = 3, T = 5, H = 2, hs = 6;
  const IndexArray pos = positions(B, T, 4);
  Tensor qkv = randn({B, T, 3 * H * hs}, rng);
  const Tensor g = randn({B, T, 3 * H * hs}, rng, 1, false);
  for (std::size_t rot : {std::size_t(6), std::size_t(4)})
    for (auto layout : {RotaryLayout::interleaved, RotaryLayout::half})
      for (bool two : {false, true}) {
        INFO("rot " << rot << ", half " << (layout == RotaryLayout::half) << ", two tables " << two);
        auto tq = std::make_shared<RotaryTables>(rotary_tables(pos, rot, 100.0));
        auto tk = two ? std::make_shared<RotaryTables>(*tq) : tq;
        if (two) scale_rotary_tables(*tk, pos, [](std::int32_t p, std::size_t i) { return 1.0 + 0.1 * p - 0.05 * i; });
        std::vector<Array> got, want;
        for (bool fused : {true, false}) {
          qkv.zero_grad();
          const Tensor y = fused ? rotary_qkv(qkv, H, tq, tk, layout) : split_rotate_merge(qkv, H, tq, tk, layout);
          y.backward(g.value());
          (fused ? got : want) = {y.value(), qkv.grad()};
        }
        for (std::size_t i = 0; i < 2; ++i) {
          REQUIRE(got[i].shape() == want[i].shape());
          const bool equal = got[i] == want[i];  // the same arithmetic per element: equal, not close
          CHECK(equal);
        }
      }
}

TEST_CASE("rotary_qkv gradient by central differences, and a second use accumulates", "[rotary][grad]") {
  Rng rng(9);
  const IndexArray pos = positions(2, 4, 3);
  Tensor qkv = randn({2, 4, 3 * 2 * 4}, rng);
  auto tq = std::make_shared<RotaryTables>(rotary_tables(pos, 4, 50.0));
  auto tk = std::make_shared<RotaryTables>(*tq);
  scale_rotary_tables(*tk, pos, [](std::int32_t p, std::size_t) { return 0.9 + 0.05 * p; });
  for (auto layout : {RotaryLayout::interleaved, RotaryLayout::half}) {
    gradcheck([&](const std::vector<Tensor>& in) { return rotary_qkv(in[0], 2, tq, tk, layout); }, {qkv});
    gradcheck([&](const std::vector<Tensor>& in) {  // the second backward adds to the first's gradient
      return add(rotary_qkv(in[0], 2, tq, tk, layout), mul(in[0], in[0]));
    }, {qkv});
  }
}

TEST_CASE("rotary_qkv errors name the op and the shapes", "[rotary][errors]") {
  const IndexArray pos = positions(2, 5, 0);
  auto tb = std::make_shared<RotaryTables>(rotary_tables(pos, 4, 10000.0));
  CHECK_THROWS_WITH(rotary_qkv(Tensor::zeros({2, 5, 20}), 3, tb, tb, RotaryLayout::half),
                    Catch::Contains("rotary_qkv") && Catch::Contains("3 chunks x 3 heads"));
  CHECK_THROWS_WITH(rotary_qkv(Tensor::zeros({2, 4, 24}), 2, tb, tb, RotaryLayout::half),
                    Catch::Contains("do not match input (2, 4, 24)"));
  CHECK_THROWS_WITH(rotary_qkv(Tensor::zeros({2, 5, 6}), 1, tb, tb, RotaryLayout::half), Catch::Contains("head size 2"));
  CHECK_THROWS_WITH(rotary_qkv(Tensor::zeros({2, 5, 24}), 2, tb, nullptr, RotaryLayout::half),
                    Catch::Contains("no angle tables"));
}

TEST_CASE("rotary_tables with explicit frequencies: the (rot, base) form is the same tables, bit for bit", "[rotary]") {
  const IndexArray pos = positions(2, 6, 5);
  std::vector<double> inv_freq(4);
  for (std::size_t i = 0; i < 4; ++i) inv_freq[i] = std::pow(500.0, -2.0 * double(i) / 8.0);
  const RotaryTables a = rotary_tables(pos, 8, 500.0), b = rotary_tables(pos, inv_freq);
  CHECK(rotary_inv_freq(8, 500.0) == inv_freq);
  CHECK((a.cos == b.cos));
  CHECK((a.sin == b.sin));
  // arbitrary frequencies (e.g. interpolated positions): angle = pos * inv_freq[i]
  const std::vector<double> f = {0.3, 0.02, 1.7};
  const RotaryTables c = rotary_tables(pos, f);
  REQUIRE(c.cos.shape() == (Shape{2, 6, 3}));
  REQUIRE(c.n_pairs() == 3);
  for (std::size_t bb = 0; bb < 2; ++bb)
    for (std::size_t t = 0; t < 6; ++t)
      for (std::size_t i = 0; i < 3; ++i) {
        CHECK(c.cos(bb, t, i) == Approx(std::cos(pos(bb, t) * f[i])).margin(1e-15));
        CHECK(c.sin(bb, t, i) == Approx(std::sin(pos(bb, t) * f[i])).margin(1e-15));
      }
  CHECK_THROWS_WITH(rotary_tables(pos, std::vector<double>{}), Catch::Contains("rotary_tables"));
}

namespace {
// xPos-style tables: rotation by pos * theta_i, scaled by zeta_i^(sign * pos / scale_base).
std::shared_ptr<RotaryTables> xpos_tables(const IndexArray& pos, std::size_t rot, double sign) {
  auto tb = std::make_shared<RotaryTables>(rotary_tables(pos, rot, 100.0));
  scale_rotary_tables(*tb, pos, [rot, sign](std::int32_t p, std::size_t i) {
    const double zeta = (2.0 * double(i) / double(rot) + 0.4) / 1.4;
    return std::pow(zeta, sign * double(p) / 16.0);
  });
  return tb;
}
}  // namespace

TEST_CASE("scaled rotary tables: values, the backward is the transpose, gradients", "[rotary][grad]") {
  Rng rng(5);
  const IndexArray pos = positions(2, 5, 3);
  Tensor x = randn({2, 3, 5, 8}, rng);
  for (std::size_t rot : {std::size_t(8), std::size_t(6)})
    for (auto layout : {RotaryLayout::interleaved, RotaryLayout::half}) {
      INFO("rot " << rot << " layout " << int(layout));
      auto plain = std::make_shared<RotaryTables>(rotary_tables(pos, rot, 100.0));
      auto scaled = xpos_tables(pos, rot, 1.0);
      // values: the scaled op is the plain rotation times the pair's scale
      const Tensor yp = rotary(x, plain, layout), ys = rotary(x, scaled, layout);
      REQUIRE(ys.shape() == x.shape());
      const std::size_t P = rot / 2;
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h)
          for (std::size_t t = 0; t < 5; ++t)
            for (std::size_t i = 0; i < P; ++i) {
              const double m = std::pow((2.0 * double(i) / double(rot) + 0.4) / 1.4, double(pos(b, t)) / 16.0);
              const std::size_t d = layout == RotaryLayout::interleaved ? 2 * i : i;
              CHECK(ys.value()(b, h, t, d) == Approx(m * yp.value()(b, h, t, d)).margin(1e-12));
            }
      // <g, f(x)> = <f^T(g), x>: backward applies the transpose of the forward map (not its inverse)
      Tape::current().clear();
      Tensor xl = x.detach().set_requires_grad();
      Rng grng(9);
      const Tensor g = randn(x.shape(), grng, 1, false);
      rotary(xl, scaled, layout).backward(g.value());
      double lhs = 0, rhs = 0;
      for (std::size_t n = 0; n < x.numel(); ++n) {
        lhs += double(g.data()[n]) * double(ys.data()[n]);
        rhs += double(xl.grad().data()[n]) * double(x.data()[n]);
      }
      CHECK(lhs == Approx(rhs).epsilon(1e-12));
      gradcheck([&](const std::vector<Tensor>& in) { return rotary(in[0], scaled, layout); }, {x});
    }
}

TEST_CASE("xPos-style q and k tables: q_m . k_n depends only on m - n", "[rotary]") {
  Rng rng(6);
  const std::size_t T = 6, hs = 8;
  Tensor q = randn({1, 1, 1, hs}, rng, 1, false), k = randn({1, 1, 1, hs}, rng, 1, false);
  // one query and one key repeated at every position; two shifts of the same positions
  auto dots = [&](int shift) {
    IndexArray pos(IndexArray::shape_type{1, T});
    for (std::size_t t = 0; t < T; ++t) pos(0, t) = static_cast<int>(t) + shift;
    Array qa(Shape{1, 1, T, hs}), ka(Shape{1, 1, T, hs});
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < hs; ++c) qa(0, 0, t, c) = q.value()(0, 0, 0, c), ka(0, 0, t, c) = k.value()(0, 0, 0, c);
    const Tensor qr = rotary(Tensor(qa), xpos_tables(pos, hs, 1.0), RotaryLayout::half);
    const Tensor kr = rotary(Tensor(ka), xpos_tables(pos, hs, -1.0), RotaryLayout::half);
    std::vector<double> out;
    for (std::size_t m = 0; m < T; ++m)
      for (std::size_t n = 0; n <= m; ++n) {
        double s = 0;
        for (std::size_t c = 0; c < hs; ++c) s += qr.value()(0, 0, m, c) * kr.value()(0, 0, n, c);
        out.push_back(s);
      }
    return out;
  };
  const std::vector<double> a = dots(0), b = dots(37);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-10));
  // pairs (m, n) in order (0,0) (1,0) (1,1) (2,0) (2,1) (2,2): equal distances give equal dots
  CHECK(a[0] == Approx(a[2]).epsilon(1e-10));
  CHECK(a[0] == Approx(a[5]).epsilon(1e-10));
  CHECK(a[1] == Approx(a[4]).epsilon(1e-10));
  CHECK(a[0] != Approx(a[1]));
}

TEST_CASE("scale_rotary_tables errors", "[rotary][errors]") {
  RotaryTables tb = rotary_tables(positions(2, 5, 0), 8, 100.0);
  CHECK_THROWS_WITH(scale_rotary_tables(tb, positions(2, 4, 0), [](std::int32_t, std::size_t) { return 1.0; }),
                    Catch::Contains("scale_rotary_tables") && Catch::Contains("(2, 4)"));
}
