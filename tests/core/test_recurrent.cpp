// gru and lstm: forward against the equations written out element by element (no GEMM), gradients of
// every input against central differences, the initial state's role, errors.
#include <cmath>

#include "core/ops/recurrent.hpp"
#include "core/ops/reduce.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// sum_k w[row, k] v[k] for a (rows, n) matrix w, plus b[row] when given.
double affine(const Tensor& w, const Tensor& b, std::size_t row, const std::vector<double>& v) {
  const std::size_t n = w.size(1);
  double s = b.defined() ? double(b.data()[row]) : 0.0;
  for (std::size_t k = 0; k < n; ++k) s += double(w.data()[row * n + k]) * v[k];
  return s;
}

std::vector<double> row_of(const Tensor& t, std::size_t offset, std::size_t n) {
  if (!t.defined()) return std::vector<double>(n, 0.0);
  return std::vector<double>(t.data() + offset, t.data() + offset + n);
}

// torch.nn.GRU's equations, one element at a time: (B, T, H) as a flat vector.
std::vector<double> naive_gru(const Tensor& x, const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh,
                              const Tensor& b_ih, const Tensor& b_hh) {
  const std::size_t B = x.size(0), T = x.size(1), I = x.size(2), H = w_hh.size(1);
  std::vector<double> out(B * T * H);
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<double> h = row_of(h0, b * H, H);
    for (std::size_t t = 0; t < T; ++t) {
      const std::vector<double> xt = row_of(x, (b * T + t) * I, I);
      std::vector<double> hn(H);
      for (std::size_t j = 0; j < H; ++j) {
        const double r = sig(affine(w_ih, b_ih, j, xt) + affine(w_hh, b_hh, j, h));
        const double z = sig(affine(w_ih, b_ih, H + j, xt) + affine(w_hh, b_hh, H + j, h));
        const double n = std::tanh(affine(w_ih, b_ih, 2 * H + j, xt) + r * affine(w_hh, b_hh, 2 * H + j, h));
        hn[j] = (1 - z) * n + z * h[j];
      }
      h = hn;
      for (std::size_t j = 0; j < H; ++j) out[(b * T + t) * H + j] = h[j];
    }
  }
  return out;
}

// torch.nn.LSTM's equations, one element at a time.
std::vector<double> naive_lstm(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  const std::size_t B = x.size(0), T = x.size(1), I = x.size(2), H = w_hh.size(1);
  std::vector<double> out(B * T * H);
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<double> h = row_of(h0, b * H, H), c = row_of(c0, b * H, H);
    for (std::size_t t = 0; t < T; ++t) {
      const std::vector<double> xt = row_of(x, (b * T + t) * I, I);
      std::vector<double> hn(H);
      for (std::size_t j = 0; j < H; ++j) {
        auto pre = [&](std::size_t gate) { return affine(w_ih, b_ih, gate * H + j, xt) + affine(w_hh, b_hh, gate * H + j, h); };
        const double i = sig(pre(0)), f = sig(pre(1)), g = std::tanh(pre(2)), o = sig(pre(3));
        c[j] = f * c[j] + i * g;
        hn[j] = o * std::tanh(c[j]);
      }
      h = hn;
      for (std::size_t j = 0; j < H; ++j) out[(b * T + t) * H + j] = h[j];
    }
  }
  return out;
}

void check_same(const Tensor& y, const std::vector<double>& want, std::size_t B, std::size_t T, std::size_t H) {
  REQUIRE(y.shape() == Shape{B, T, H});
  REQUIRE(want.size() == y.numel());
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(y.data()[i]) - want[i]));
  INFO("worst difference " << worst);
  CHECK(worst < 1e-12);
}

}  // namespace

TEST_CASE("gru equals torch.nn.GRU's equations evaluated element by element", "[recurrent][gru]") {
  Rng rng(41);
  const std::size_t B = 3, T = 5, I = 4, H = 6;
  Tensor x = randn({B, T, I}, rng, 1.0, false), h0 = randn({B, H}, rng, 0.5, false);
  Tensor w_ih = randn({3 * H, I}, rng, 0.5, false), w_hh = randn({3 * H, H}, rng, 0.5, false);
  Tensor b_ih = randn({3 * H}, rng, 0.5, false), b_hh = randn({3 * H}, rng, 0.5, false);
  check_same(gru(x, h0, w_ih, w_hh, b_ih, b_hh), naive_gru(x, h0, w_ih, w_hh, b_ih, b_hh), B, T, H);
  check_same(gru(x, Tensor(), w_ih, w_hh, Tensor(), Tensor()), naive_gru(x, Tensor(), w_ih, w_hh, Tensor(), Tensor()),
             B, T, H);
  // b_hn sits inside r * (W_hn h + b_hn): moving it into b_in must change the result (the gate order matters).
  Tensor b_moved = Tensor(b_ih.value());
  Tensor b_hh_moved = Tensor(b_hh.value());
  for (std::size_t j = 0; j < H; ++j) {
    b_moved.mutable_data()[2 * H + j] += b_hh.data()[2 * H + j];
    b_hh_moved.mutable_data()[2 * H + j] = 0;
  }
  const Tensor a = gru(x, h0, w_ih, w_hh, b_ih, b_hh), m = gru(x, h0, w_ih, w_hh, b_moved, b_hh_moved);
  double diff = 0;
  for (std::size_t i = 0; i < a.numel(); ++i) diff = std::max(diff, std::abs(double(a.data()[i] - m.data()[i])));
  CHECK(diff > 1e-3);
}

TEST_CASE("lstm equals torch.nn.LSTM's equations evaluated element by element", "[recurrent][lstm]") {
  Rng rng(42);
  const std::size_t B = 2, T = 6, I = 3, H = 5;
  Tensor x = randn({B, T, I}, rng, 1.0, false), h0 = randn({B, H}, rng, 0.5, false), c0 = randn({B, H}, rng, 0.5, false);
  Tensor w_ih = randn({4 * H, I}, rng, 0.5, false), w_hh = randn({4 * H, H}, rng, 0.5, false);
  Tensor b_ih = randn({4 * H}, rng, 0.5, false), b_hh = randn({4 * H}, rng, 0.5, false);
  check_same(lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh), naive_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh), B, T, H);
  check_same(lstm(x, Tensor(), Tensor(), w_ih, w_hh, Tensor(), Tensor()),
             naive_lstm(x, Tensor(), Tensor(), w_ih, w_hh, Tensor(), Tensor()), B, T, H);
}

TEST_CASE("a hand-computed GRU and LSTM step", "[recurrent]") {
  // One unit, one input, x = 1, h0 = 0.5, c0 = 0.25; gate weights w_ih = (1, 2, 3[, 4]) and w_hh = 0.5 each, no bias.
  Tensor x = Tensor::from({1, 1, 1}, {1}), h0 = Tensor::from({1, 1}, {0.5}), c0 = Tensor::from({1, 1}, {0.25});
  const double r = sig(1 + 0.25), z = sig(2 + 0.25), n = std::tanh(3 + r * 0.25);
  const Tensor y = gru(x, h0, Tensor::from({3, 1}, {1, 2, 3}), Tensor::from({3, 1}, {0.5, 0.5, 0.5}), Tensor(), Tensor());
  CHECK(y.item() == Approx((1 - z) * n + z * 0.5).epsilon(1e-14));
  const double i = sig(1.25), f = sig(2.25), g = std::tanh(3.25), o = sig(4.25), c = f * 0.25 + i * g;
  const Tensor yl = lstm(x, h0, c0, Tensor::from({4, 1}, {1, 2, 3, 4}), Tensor::from({4, 1}, {0.5, 0.5, 0.5, 0.5}),
                         Tensor(), Tensor());
  CHECK(yl.item() == Approx(o * std::tanh(c)).epsilon(1e-14));
}

TEST_CASE("gru gradients of x h0 w_ih w_hh b_ih b_hh against central differences", "[recurrent][gru][grad]") {
  Rng rng(43);
  const std::size_t B = 2, T = 4, I = 3, H = 4;
  auto f = [](const std::vector<Tensor>& in) { return gru(in[0], in[1], in[2], in[3], in[4], in[5]); };
  auto r = gradcheck(f, {randn({B, T, I}, rng), randn({B, H}, rng, 0.5), randn({3 * H, I}, rng, 0.6),
                         randn({3 * H, H}, rng, 0.6), randn({3 * H}, rng, 0.5), randn({3 * H}, rng, 0.5)});
  CHECK(r.checked == B * T * I + B * H + 3 * H * I + 3 * H * H + 6 * H);
  // No initial state, no biases.
  gradcheck([](const std::vector<Tensor>& in) { return gru(in[0], Tensor(), in[1], in[2], Tensor(), Tensor()); },
            {randn({B, T, I}, rng), randn({3 * H, I}, rng, 0.6), randn({3 * H, H}, rng, 0.6)});
}

TEST_CASE("lstm gradients of x h0 c0 w_ih w_hh b_ih b_hh against central differences", "[recurrent][lstm][grad]") {
  Rng rng(44);
  const std::size_t B = 2, T = 4, I = 3, H = 4;
  auto f = [](const std::vector<Tensor>& in) { return lstm(in[0], in[1], in[2], in[3], in[4], in[5], in[6]); };
  auto r = gradcheck(f, {randn({B, T, I}, rng), randn({B, H}, rng, 0.5), randn({B, H}, rng, 0.5),
                         randn({4 * H, I}, rng, 0.6), randn({4 * H, H}, rng, 0.6), randn({4 * H}, rng, 0.5),
                         randn({4 * H}, rng, 0.5)});
  CHECK(r.checked == B * T * I + 2 * B * H + 4 * H * I + 4 * H * H + 8 * H);
  gradcheck([](const std::vector<Tensor>& in) { return lstm(in[0], Tensor(), Tensor(), in[1], in[2], Tensor(), Tensor()); },
            {randn({B, T, I}, rng), randn({4 * H, I}, rng, 0.6), randn({4 * H, H}, rng, 0.6)});
}

TEST_CASE("recurrent gradients when only one input requires grad, and through a long sequence", "[recurrent][grad]") {
  Rng rng(45);
  const std::size_t B = 2, T = 3, I = 2, H = 3;
  const std::vector<Shape> gs = {{B, T, I}, {B, H}, {3 * H, I}, {3 * H, H}, {3 * H}, {3 * H}};
  for (std::size_t k = 0; k < gs.size(); ++k) {
    INFO("gru: only input " << k << " requires grad");
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < gs.size(); ++i) in.push_back(randn(gs[i], rng, 0.7, i == k));
    gradcheck([](const std::vector<Tensor>& v) { return gru(v[0], v[1], v[2], v[3], v[4], v[5]); }, in);
  }
  const std::vector<Shape> ls = {{B, T, I}, {B, H}, {B, H}, {4 * H, I}, {4 * H, H}, {4 * H}, {4 * H}};
  for (std::size_t k = 0; k < ls.size(); ++k) {
    INFO("lstm: only input " << k << " requires grad");
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < ls.size(); ++i) in.push_back(randn(ls[i], rng, 0.7, i == k));
    gradcheck([](const std::vector<Tensor>& v) { return lstm(v[0], v[1], v[2], v[3], v[4], v[5], v[6]); }, in);
  }
  // 24 steps: the gradient of the first input passes through every recurrent GEMM.
  gradcheck([](const std::vector<Tensor>& v) { return gru(v[0], Tensor(), v[1], v[2], v[3], Tensor()); },
            {randn({1, 24, 2}, rng), randn({9, 2}, rng, 0.8), randn({9, 3}, rng, 0.8), randn({9}, rng, 0.5)});
  gradcheck([](const std::vector<Tensor>& v) { return lstm(v[0], Tensor(), Tensor(), v[1], v[2], v[3], Tensor()); },
            {randn({1, 24, 2}, rng), randn({12, 2}, rng, 0.8), randn({12, 3}, rng, 0.8), randn({12}, rng, 0.5)});
}

TEST_CASE("recurrent outputs at step t do not depend on inputs after t", "[recurrent]") {
  Rng rng(46);
  Tensor x = randn({2, 6, 3}, rng, 1.0, false);
  Tensor w_ih = randn({12, 3}, rng, 0.5, false), w_hh = randn({12, 3}, rng, 0.5, false);
  const Array base = lstm(x, Tensor(), Tensor(), w_ih, w_hh, Tensor(), Tensor()).value();
  Tensor x2(x.value());
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t k = 0; k < 3; ++k) x2.mutable_value()(b, 4, k) += 1;
  const Array moved = lstm(x2, Tensor(), Tensor(), w_ih, w_hh, Tensor(), Tensor()).value();
  bool before = true, after = false;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 6; ++t)
      for (std::size_t j = 0; j < 3; ++j) {
        if (t < 4) before = before && moved(b, t, j) == base(b, t, j);
        else after = after || moved(b, t, j) != base(b, t, j);
      }
  CHECK(before);
  CHECK(after);
}

TEST_CASE("recurrent ops name the op and the mismatched argument", "[recurrent][errors]") {
  Tensor x = Tensor::zeros({2, 3, 4}), w_ih = Tensor::zeros({15, 4}), w_hh = Tensor::zeros({15, 5});
  CHECK_NOTHROW(gru(x, Tensor(), w_ih, w_hh, Tensor(), Tensor()));
  CHECK_THROWS_WITH(gru(Tensor::zeros({2, 4}), Tensor(), w_ih, w_hh, Tensor(), Tensor()),
                    Catch::Contains("gru") && Catch::Contains("(B, T, I)"));
  CHECK_THROWS_WITH(gru(x, Tensor(), Tensor::zeros({15, 3}), w_hh, Tensor(), Tensor()), Catch::Contains("w_ih"));
  CHECK_THROWS_WITH(gru(x, Tensor(), w_ih, Tensor::zeros({12, 5}), Tensor(), Tensor()),
                    Catch::Contains("w_hh must be (3H, H)"));
  CHECK_THROWS_WITH(gru(x, Tensor::zeros({3, 5}), w_ih, w_hh, Tensor(), Tensor()), Catch::Contains("h0"));
  CHECK_THROWS_WITH(gru(x, Tensor(), w_ih, w_hh, Tensor::zeros({5}), Tensor()), Catch::Contains("b_ih"));
  CHECK_THROWS_WITH(lstm(x, Tensor(), Tensor(), w_ih, w_hh, Tensor(), Tensor()), Catch::Contains("lstm") &&
                    Catch::Contains("(4H, H)"));
  CHECK_THROWS_WITH(lstm(x, Tensor(), Tensor::zeros({2, 4}), Tensor::zeros({20, 4}), Tensor::zeros({20, 5}), Tensor(),
                         Tensor()),
                    Catch::Contains("c0"));
}
