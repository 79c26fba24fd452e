// attention core in the float build: at a realistic size the float result stays close to a double
// reference, masked probabilities are exactly zero, and huge logits do not overflow.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "core/ops/attention.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"

using namespace pelab;

namespace {

Tensor randn_f(const Shape& shape, Rng& rng, double scale) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(rng.normal() * scale);
  return Tensor(std::move(a), true);
}

// Causal attention with default scale, in double, from the definition: out (B, H, T, hs) and the
// probabilities (B, H, T, T).
std::pair<std::vector<double>, std::vector<double>> naive_causal(const Tensor& q, const Tensor& k, const Tensor& v) {
  const std::size_t B = q.size(0), H = q.size(1), T = q.size(2), hs = q.size(3);
  std::vector<double> out(B * H * T * hs, 0.0), probs(B * H * T * T, 0.0), s(T);
  const double sc = 1.0 / std::sqrt(double(hs));
  for (std::size_t bh = 0; bh < B * H; ++bh)
    for (std::size_t i = 0; i < T; ++i) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        double d = 0;
        for (std::size_t c = 0; c < hs; ++c) d += double(q.data()[(bh * T + i) * hs + c]) * double(k.data()[(bh * T + j) * hs + c]);
        s[j] = sc * d;
        mx = std::max(mx, s[j]);
      }
      for (std::size_t j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (std::size_t j = 0; j <= i; ++j) {
        probs[(bh * T + i) * T + j] = s[j] / sum;
        for (std::size_t c = 0; c < hs; ++c) out[(bh * T + i) * hs + c] += s[j] / sum * double(v.data()[(bh * T + j) * hs + c]);
      }
    }
  return {out, probs};
}

}  // namespace

TEST_CASE("float attention stays close to a double reference at a realistic size", "[attention][f32]") {
  Rng rng(21);
  for (double logit_scale : {1.0, 30.0}) {  // 30: very peaked softmax, logits in the thousands
    INFO("input scale " << logit_scale);
    Tensor q = randn_f({2, 4, 64, 32}, rng, logit_scale), k = randn_f({2, 4, 64, 32}, rng, logit_scale);
    Tensor v = randn_f({2, 4, 64, 32}, rng, 1.0);
    Array probs;
    AttentionOptions o;
    o.probs_out = &probs;
    Tensor y = attention(q, k, v, o);
    const auto [ref, ref_probs] = naive_causal(q, k, v);
    REQUIRE(y.numel() == ref.size());
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      REQUIRE(std::isfinite(y.data()[i]));
      worst = std::max(worst, std::abs(double(y.data()[i]) - ref[i]));
    }
    CHECK(worst < (logit_scale > 1 ? 1e-3 : 1e-5));  // peaked softmax amplifies float rounding of logits
    REQUIRE(probs.shape() == (Shape{2, 4, 64, 64}));
    REQUIRE(probs.size() == ref_probs.size());
    if (logit_scale == 1.0) {  // relative accuracy of every probability (exercises the float exp)
      double worst_rel = 0;
      for (std::size_t i = 0; i < ref_probs.size(); ++i)
        if (ref_probs[i] > 0) worst_rel = std::max(worst_rel, std::abs(probs.data()[i] - ref_probs[i]) / ref_probs[i]);
      CHECK(worst_rel < 3e-6);
    }
    for (std::size_t r = 0; r < 2 * 4 * 64; ++r)
      for (std::size_t j = r % 64 + 1; j < 64; ++j) CHECK(probs.data()[r * 64 + j] == 0.0f);
    // backward runs and produces finite gradients
    y.backward(xt::ones<real>(y.shape()));
    for (const Tensor* t : {&q, &k, &v}) {
      REQUIRE(t->has_grad());
      for (std::size_t i = 0; i < t->numel(); ++i) REQUIRE(std::isfinite(t->grad().data()[i]));
    }
  }
}

TEST_CASE("float attention: -inf bias gives zero probability and NaN propagates", "[attention][f32]") {
  Rng rng(22);
  Tensor q = randn_f({1, 1, 3, 4}, rng, 1.0), k = randn_f({1, 1, 3, 4}, rng, 1.0), v = randn_f({1, 1, 3, 4}, rng, 1.0);
  Array probs;
  AttentionOptions o;
  o.causal = false;
  o.bias = Tensor::zeros({1, 1, 3, 3});
  o.bias.mutable_data()[1] = -std::numeric_limits<real>::infinity();  // row 0 may not see key 1
  o.probs_out = &probs;
  Tensor y = attention(q, k, v, o);
  REQUIRE(probs.size() == 9);
  CHECK(probs.data()[1] == 0.0f);
  CHECK(probs.data()[0] + probs.data()[2] == Approx(1.0f).epsilon(1e-6));
  for (std::size_t i = 0; i < y.numel(); ++i) CHECK(std::isfinite(y.data()[i]));
  q.mutable_data()[4] = std::numeric_limits<real>::quiet_NaN();  // query row 1
  y = attention(q, k, v, o);
  for (std::size_t c = 0; c < 4; ++c) {
    CHECK(std::isnan(y.data()[4 + c]));
    CHECK(std::isfinite(y.data()[c]));
  }
  Tape::current().clear();  // nothing here is backpropagated
}
