// path_key_bias (PaTH's key transform, core/ops/path_keys.hpp): values against the recurrence in plain
// loops, gradients by central differences and against the per-token tape formulation it replaced,
// the same bits at 1 and 2 threads, errors.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/ops/common.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/path_keys.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/shape.hpp"
#include "core/parallel.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;
using pelab::test::uniform;

namespace {

// w (B, H, T, hs) with unit rows, as PaTH's are (the op does not need them unit).
Tensor unit_rows(const Shape& shape, Rng& rng, bool requires_grad = true) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(rng.normal());
  const std::size_t hs = shape.back();
  for (std::size_t r = 0; r < a.size() / hs; ++r) {
    double n = 0;
    for (std::size_t c = 0; c < hs; ++c) n += double(a.data()[r * hs + c]) * double(a.data()[r * hs + c]);
    for (std::size_t c = 0; c < hs; ++c) a.data()[r * hs + c] = static_cast<real>(a.data()[r * hs + c] / std::sqrt(n));
  }
  return Tensor(std::move(a), requires_grad);
}

// The recurrence in plain loops: every arriving token i transforms the earlier keys, then query i reads them.
Array naive(const Array& q, const Array& k, const Array& w, const Array& beta, double scale) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], hs = q.shape()[3];
  Array out(Shape{B, H, T, T});
  out.fill(0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      std::vector<std::vector<double>> K(T, std::vector<double>(hs));
      for (std::size_t j = 0; j < T; ++j)
        for (std::size_t c = 0; c < hs; ++c) K[j][c] = k(b, h, j, c);
      for (std::size_t i = 1; i < T; ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          double d = 0;
          for (std::size_t c = 0; c < hs; ++c) d += K[j][c] * w(b, h, i, c);
          for (std::size_t c = 0; c < hs; ++c) K[j][c] -= beta(b, h, i) * d * w(b, h, i, c);
        }
        for (std::size_t j = 0; j < i; ++j) {
          double s = 0;
          for (std::size_t c = 0; c < hs; ++c) s += q(b, h, i, c) * (K[j][c] - k(b, h, j, c));
          out(b, h, i, j) = static_cast<real>(scale * s);
        }
      }
    }
  return out;
}

// The per-token tape formulation layers/positional/path.cpp used before the fused op: T steps of
// slices, products and sums over (B, H, T, hs), each step's keys on the tape.
Tensor tape_steps(const Tensor& q, const Tensor& k, const Tensor& w, const Tensor& beta, real scale) {
  const std::size_t B = q.size(0), H = q.size(1), T = q.size(2);
  Tensor K = k;
  std::vector<Tensor> rows;
  for (std::size_t i = 0; i < T; ++i) {
    if (i > 0) {
      Array m(Shape{1, 1, T, 1});
      for (std::size_t j = 0; j < T; ++j) m(0, 0, j, 0) = real(j < i);
      const Tensor wi = slice(w, 2, i, i + 1);                                    // (B, H, 1, hs)
      const Tensor bi = reshape(slice(beta, 2, i, i + 1), {B, H, 1, 1});
      const Tensor dot = mul(sum(mul(K, wi), {3}, true), Tensor(std::move(m)));   // (B, H, T, 1)
      K = sub(K, mul(mul(dot, bi), wi));
    }
    rows.push_back(matmul(slice(q, 2, i, i + 1), K, false, true));                // (B, H, 1, T)
  }
  return mul_scalar(sub(concat(rows, 2), matmul(q, k, false, true)), scale);
}

struct Inputs {
  Tensor q, k, w, beta;
};
Inputs make_inputs(std::size_t B, std::size_t H, std::size_t T, std::size_t hs, std::uint64_t seed) {
  Rng rng(seed);
  Inputs in;
  in.q = randn({B, H, T, hs}, rng);
  in.k = randn({B, H, T, hs}, rng);
  in.w = unit_rows({B, H, T, hs}, rng);
  in.beta = uniform({B, H, T}, rng, 0.05, 1.95);  // across (0, 2): reflections (beta = 2) and near-identities
  return in;
}

}  // namespace

TEST_CASE("path_key_bias equals the recurrence in plain loops", "[path_keys]") {
  for (const real scale : {real(1), real(0.4)}) {
    const Inputs in = make_inputs(2, 3, 7, 5, 41);
    NoGrad no_grad;
    const Tensor y = path_key_bias(in.q, in.k, in.w, in.beta, scale);
    REQUIRE(y.shape() == Shape{2, 3, 7, 7});
    const Array ref = naive(in.q.value(), in.k.value(), in.w.value(), in.beta.value(), scale);
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(double(y.data()[i] - ref.data()[i])));
    CHECK(worst < 1e-13);
    for (std::size_t b = 0; b < 2; ++b)  // exactly 0 on and above the diagonal
      for (std::size_t h = 0; h < 3; ++h)
        for (std::size_t i = 0; i < 7; ++i)
          for (std::size_t j = i; j < 7; ++j) CHECK(y.value()(b, h, i, j) == real(0));
  }
  // Non-unit w: the op takes any directions.
  Rng rng(42);
  const Tensor q = randn({1, 2, 6, 4}, rng, 1, false), k = randn({1, 2, 6, 4}, rng, 1, false);
  const Tensor w = randn({1, 2, 6, 4}, rng, 0.7, false), beta = uniform({1, 2, 6}, rng, 0.1, 1.9, false);
  const Array ref = naive(q.value(), k.value(), w.value(), beta.value(), 1);
  const Tensor y = path_key_bias(q, k, w, beta, 1);
  for (std::size_t i = 0; i < ref.size(); ++i) CHECK(double(y.data()[i]) == Approx(double(ref.data()[i])).margin(1e-13));
}

TEST_CASE("path_key_bias gradients: q, k, w and beta by central differences", "[path_keys][grad]") {
  const Inputs in = make_inputs(2, 3, 7, 5, 43);
  auto f = [](const std::vector<Tensor>& x) { return path_key_bias(x[0], x[1], x[2], x[3], real(0.6)); };
  gradcheck(f, {in.q, in.k, in.w, in.beta});
  // Some inputs constant: the op saves less (q only for the keys' adjoint) and skips the reverse pass.
  Rng rng(44);
  const Tensor qc = randn({2, 3, 7, 5}, rng, 1, false), kc = randn({2, 3, 7, 5}, rng, 1, false);
  const Tensor wc = unit_rows({2, 3, 7, 5}, rng, false), bc = uniform({2, 3, 7}, rng, 0.05, 1.95, false);
  gradcheck([&](const std::vector<Tensor>& x) { return path_key_bias(x[0], kc, wc, bc, 1); }, {in.q});
  gradcheck([&](const std::vector<Tensor>& x) { return path_key_bias(qc, kc, x[0], bc, 1); }, {in.w});
  gradcheck([&](const std::vector<Tensor>& x) { return path_key_bias(qc, x[0], wc, x[1], 1); }, {in.k, in.beta});
  // One token: nothing to transform (all-zero bias and gradients); two tokens: one step.
  for (std::size_t T : {1, 2}) {
    const Inputs s = make_inputs(1, 2, T, 3, 45);
    gradcheck(f, {s.q, s.k, s.w, s.beta});
  }
}

TEST_CASE("path_key_bias agrees with the per-token tape formulation at a longer length", "[path_keys][grad]") {
  const std::size_t B = 2, H = 2, T = 33, hs = 8;
  const real scale = real(1) / std::sqrt(real(hs));
  Inputs a = make_inputs(B, H, T, hs, 46), b = make_inputs(B, H, T, hs, 46);
  Rng rng(47);
  const Array R = randn({B, H, T, T}, rng, 1, false).value();
  Tape::current().clear();
  Tensor ya = path_key_bias(a.q, a.k, a.w, a.beta, scale);
  ya.backward(R);
  Tensor yb = tape_steps(b.q, b.k, b.w, b.beta, scale);
  yb.backward(R);
  auto close = [](const Array& x, const Array& y) {
    double worst = 0, top = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, std::abs(double(x.data()[i]) - double(y.data()[i])));
      top = std::max(top, std::abs(double(y.data()[i])));
    }
    INFO("worst " << worst << " of largest " << top);
    CHECK(top > 0);
    CHECK(worst <= 1e-11 * top);
  };
  close(ya.value(), yb.value());
  close(a.q.grad(), b.q.grad());
  close(a.k.grad(), b.k.grad());
  close(a.w.grad(), b.w.grad());
  close(a.beta.grad(), b.beta.grad());
}

TEST_CASE("path_key_bias: the same bits at 1 and 2 threads, forward and gradients", "[path_keys][threads]") {
  // Large enough that every (batch, head) block is a piece of its own (T^2 hs >= kParallelWork).
  const std::size_t B = 3, H = 4, T = 45, hs = 17;
  REQUIRE(T * T * hs >= detail::kParallelWork);
  Rng rng(48);
  const Array R = randn({B, H, T, T}, rng, 1, false).value();
  std::vector<Array> got[2];
  for (int threads : {1, 2}) {
    parallel::set_threads(threads);
    Inputs in = make_inputs(B, H, T, hs, 49);
    Tape::current().clear();
    Tensor y = path_key_bias(in.q, in.k, in.w, in.beta, real(0.3));
    y.backward(R);
    got[threads - 1] = {y.value(), in.q.grad(), in.k.grad(), in.w.grad(), in.beta.grad()};
  }
  parallel::set_threads(1);
  for (std::size_t i = 0; i < got[0].size(); ++i) {
    INFO("output " << i << " (0 forward, then dq, dk, dw, dbeta)");
    CHECK(std::equal(got[0][i].begin(), got[0][i].end(), got[1][i].begin(), got[1][i].end()));
  }
}

TEST_CASE("path_key_bias errors name the op and the shapes", "[path_keys][errors]") {
  const Tensor x = Tensor::zeros({1, 2, 3, 4}), beta = Tensor::zeros({1, 2, 3});
  CHECK_THROWS_WITH(path_key_bias(Tensor::zeros({2, 3, 4}), x, x, beta, 1),
                    Catch::Contains("path_key_bias") && Catch::Contains("(B, H, T, hs)"));
  CHECK_THROWS_WITH(path_key_bias(x, Tensor::zeros({1, 2, 3, 5}), x, beta, 1),
                    Catch::Contains("path_key_bias") && Catch::Contains("one shape"));
  CHECK_THROWS_WITH(path_key_bias(x, x, x, Tensor::zeros({1, 2, 4}), 1),
                    Catch::Contains("path_key_bias") && Catch::Contains("beta must be (B, H, T)"));
  CHECK_THROWS_WITH(path_key_bias(x, x, Tensor(), beta, 1), Catch::Contains("'w'"));
}

TEST_CASE("path_key_bias_rows: the full op's rows bit for bit, tile by tile, a repeated tile's old rows 0",
          "[path_keys][streaming]") {
  const std::size_t B = 2, H = 2, T = 11, hs = 4;
  const Inputs in = make_inputs(B, H, T, hs, 31);
  const real scale = real(0.5);
  const Array full = path_key_bias(in.q, in.k, in.w, in.beta, scale).value();  // (B, H, T, T)
  // Tiles of 4 rows: [0, 4), [4, 8), then the last moved back to stay full, [7, 11), as attention_by_tiles.
  PathKeys keys = path_keys_start(in.k.value());
  for (const auto& [from, to] : std::vector<std::pair<std::size_t, std::size_t>>{{0, 4}, {4, 8}, {7, 11}}) {
    INFO("rows " << from << " to " << to);
    const Array q = slice(in.q, 2, from, to).value();
    const Array rows = path_key_bias_rows(q, in.w.value(), in.beta.value(), scale, keys, from, to);
    REQUIRE(rows.shape() == Shape({B, H, to - from, T}));
    CHECK(keys.next == to);
    for (std::size_t r = 0; r < B * H; ++r)
      for (std::size_t i = from; i < to; ++i)
        for (std::size_t j = 0; j < T; ++j) {
          const real got = rows.data()[(r * (to - from) + i - from) * T + j];
          CHECK(got == (i < 8 && from == 7 ? real(0) : full.data()[(r * T + i) * T + j]));  // row 7 was given
        }
  }
}

TEST_CASE("path_key_bias_rows refuses a gap and shapes that do not match its keys", "[path_keys][errors]") {
  const Inputs in = make_inputs(1, 2, 6, 4, 32);
  PathKeys keys = path_keys_start(in.k.value());
  const Array q = slice(in.q, 2, 2, 4).value();
  CHECK_THROWS_WITH(path_key_bias_rows(q, in.w.value(), in.beta.value(), 1, keys, 2, 4),
                    Catch::Contains("path_key_bias_rows") && Catch::Contains("gap after the 0 rows given"));
  CHECK_THROWS_WITH(path_key_bias_rows(q, in.w.value(), in.beta.value(), 1, keys, 0, 3),
                    Catch::Contains("do not match the keys (B, H, T, hs) = (1, 2, 6, 4)"));
  CHECK_THROWS_WITH(path_keys_start(Array(Shape{2, 3})), Catch::Contains("k must be (B, H, T, hs)"));
}
