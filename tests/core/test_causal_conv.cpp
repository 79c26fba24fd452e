// causal_depthwise_conv: values against the definition, bits against the shifted-copies composite it
// replaced in PaTH, gradients (central differences in double), errors.
#include <cstring>

#include "core/ops/causal_conv.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/shape.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

// PaTH's former construction (layers/positional/path.cpp before the op): K shifted, scaled and added copies.
Tensor shifted_copies(const Tensor& x, const Tensor& w) {
  const std::size_t B = x.size(0), T = x.size(1), C = x.size(2), K = w.size(2);
  Tensor conv;
  for (std::size_t s = 0; s < K; ++s) {
    const std::size_t lag = K - 1 - s;
    if (lag >= T) continue;
    Tensor shifted = x;
    if (lag > 0) shifted = concat({Tensor(Array(xt::zeros<real>(Shape{B, lag, C}))), slice(x, 1, 0, T - lag)}, 1);
    const Tensor tap = mul(shifted, reshape(slice(w, 2, s, s + 1), {1, 1, C}));
    conv = conv.defined() ? add(conv, tap) : tap;
  }
  return conv;
}

bool same_bits(const Array& a, const Array& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(real)) == 0;
}

}  // namespace

TEST_CASE("causal_depthwise_conv matches its definition", "[causal_conv]") {
  Rng rng(71);
  const std::size_t B = 2, T = 5, C = 3, K = 3;
  Tensor x = randn({B, T, C}, rng, 1, false), w = randn({C, 1, K}, rng, 1, false);
  const Tensor y = causal_depthwise_conv(x, w);
  REQUIRE(y.shape() == (Shape{B, T, C}));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) {
        double want = 0;
        for (std::size_t s = 0; s < K; ++s)
          if (t + s + 1 >= K) want += x.value()(b, t + s + 1 - K, c) * w.value()(c, 0, s);
        CHECK(y.value()(b, t, c) == Approx(want).margin(1e-14));
      }
  // (C, K) taps are the same as (C, 1, K).
  CHECK(same_bits(causal_depthwise_conv(x, reshape(w, {C, K})).value(), y.value()));
}

TEST_CASE("causal_depthwise_conv gives the shifted-copies composite's bits, forward and backward",
          "[causal_conv]") {
  Rng rng(72);
  // T below, at and above K - 1 (taps past the start left out); exact zeros and negative taps (signed zeros).
  for (std::size_t T : {1, 2, 3, 7})
    for (std::size_t K : {1, 3, 4}) {
      INFO("T " << T << " K " << K);
      const std::size_t B = 2, C = 5;
      Array xv = randn({B, T, C}, rng, 1, false).value(), wv = randn({C, 1, K}, rng, 1, false).value();
      xv.data()[1] = 0, wv.data()[0] = -std::abs(wv.data()[0]);
      const Array g = randn({B, T, C}, rng, 1, false).value();
      Tensor x1(xv, true), w1(wv, true), x2(xv, true), w2(wv, true);
      const Tensor y1 = causal_depthwise_conv(x1, w1);
      y1.backward(g);  // backward consumes the whole tape: one graph at a time
      const Tensor y2 = shifted_copies(x2, w2);
      y2.backward(g);
      CHECK(same_bits(y1.value(), y2.value()));
      CHECK(same_bits(x1.grad(), x2.grad()));
      CHECK(same_bits(w1.grad(), w2.grad()));
    }
}

TEST_CASE("causal_depthwise_conv gradients", "[causal_conv][grad]") {
  Rng rng(73);
  for (std::size_t T : {1, 2, 6})
    for (std::size_t K : {1, 3}) {
      INFO("T " << T << " K " << K);
      Tensor x = randn({2, T, 4}, rng), w = randn({4, 1, K}, rng);
      auto r = gradcheck([](const std::vector<Tensor>& in) { return causal_depthwise_conv(in[0], in[1]); }, {x, w});
      CHECK(r.checked == x.numel() + w.numel());
    }
  // Only one side needing a gradient.
  Tensor x = randn({1, 4, 3}, rng), w = randn({3, 2}, rng, 1, false);
  gradcheck([w](const std::vector<Tensor>& in) { return causal_depthwise_conv(in[0], w); }, {x});
  gradcheck([x](const std::vector<Tensor>& in) { return causal_depthwise_conv(x.detach(), in[0]); }, {randn({3, 2}, rng)});
}

TEST_CASE("causal_depthwise_conv errors", "[causal_conv][errors]") {
  const Tensor x = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH(causal_depthwise_conv(Tensor::zeros({3, 4}), Tensor::zeros({4, 1, 3})),
                    Catch::Contains("causal_depthwise_conv") && Catch::Contains("(B, T, C)"));
  CHECK_THROWS_WITH(causal_depthwise_conv(x, Tensor::zeros({3, 1, 3})), Catch::Contains("C = 4"));
  CHECK_THROWS_WITH(causal_depthwise_conv(x, Tensor::zeros({4, 2, 3})), Catch::Contains("(C, 1, K)"));
  CHECK_THROWS_WITH(causal_depthwise_conv(x, Tensor::zeros({4, 0})), Catch::Contains("K >= 1"));
  CHECK_THROWS_WITH(causal_depthwise_conv(Tensor(), Tensor::zeros({4, 3})), Catch::Contains("'x'"));
  CHECK(causal_depthwise_conv(Tensor::zeros({2, 0, 4}), Tensor::zeros({4, 3})).shape() == (Shape{2, 0, 4}));
}
