// attention core: forward against a naive double-loop reference, gradients against central
// differences for every option combination, causality, and errors.
#include <cmath>
#include <limits>

#include "core/ops/attention.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

struct Naive {
  std::vector<double> out, probs;  // (B, H, Tq, hs), (B, H, Tq, Tk)
};

// Plain loops in double, straight from the definition.
Naive naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const std::size_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2), hs = q.size(3);
  Naive r;
  r.out.assign(B * H * Tq * hs, 0.0);
  r.probs.assign(B * H * Tq * Tk, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const double sc = !opt.head_scale.empty() ? double(opt.head_scale[h])
                        : opt.scale >= 0        ? double(opt.scale)
                                                : 1.0 / std::sqrt(double(hs));
      for (std::size_t i = 0; i < Tq; ++i) {
        std::vector<double> logit(Tk, -std::numeric_limits<double>::infinity());
        for (std::size_t j = 0; j < Tk; ++j) {
          if (opt.causal && j > i + (Tk - Tq)) continue;
          double dot = 0;
          for (std::size_t c = 0; c < hs; ++c)
            dot += double(q.data()[((b * H + h) * Tq + i) * hs + c]) * double(k.data()[((b * H + h) * Tk + j) * hs + c]);
          logit[j] = sc * dot;
          if (opt.bias.defined()) {  // (B or 1, H or 1, Tq, Tk)
            const std::size_t bb = opt.bias.size(0) == 1 ? 0 : b, bh = opt.bias.size(1) == 1 ? 0 : h;
            logit[j] += double(opt.bias.data()[((bb * opt.bias.size(1) + bh) * Tq + i) * Tk + j]);
          }
        }
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (double x : logit) mx = std::max(mx, x);
        for (double& x : logit) sum += (x = std::exp(x - mx));
        for (std::size_t j = 0; j < Tk; ++j) {
          const double p = logit[j] / sum;
          r.probs[((b * H + h) * Tq + i) * Tk + j] = p;
          for (std::size_t c = 0; c < hs; ++c)
            r.out[((b * H + h) * Tq + i) * hs + c] += p * double(v.data()[((b * H + h) * Tk + j) * hs + c]);
        }
      }
    }
  return r;
}

struct Combo {
  const char* name;
  bool causal;
  int bias_heads;  // 0 none, 1 shared, 3 per head
  int bias_batch;  // 1 shared by the batch, 2 per batch row
  real scale;
  bool head_scale;
  std::size_t Tq, Tk;
};

const std::vector<Combo> kCombos = {
    {"causal square", true, 0, 1, -1, false, 5, 5},
    {"non-causal square", false, 0, 1, -1, false, 5, 5},
    {"causal Tq<Tk offset", true, 0, 1, -1, false, 4, 5},
    {"non-causal Tq<Tk", false, 0, 1, -1, false, 4, 5},
    {"non-causal Tq>Tk", false, 0, 1, -1, false, 5, 4},
    {"causal per-head bias", true, 3, 1, -1, false, 4, 5},
    {"non-causal shared bias", false, 1, 1, -1, false, 4, 5},
    {"causal shared bias square", true, 1, 1, -1, false, 5, 5},
    {"causal per-row per-head bias", true, 3, 2, -1, false, 4, 5},
    {"non-causal per-row bias shared by heads", false, 1, 2, -1, false, 5, 4},
    {"custom scale", true, 0, 1, real(0.8), false, 4, 5},
    {"zero scale", false, 0, 1, real(0), false, 4, 5},
    {"per-head scales with bias", true, 3, 1, real(0.3), true, 4, 5},
    {"per-head scales non-causal", false, 1, 1, -1, true, 5, 5},
    {"per-head scales, per-row bias", true, 3, 2, -1, true, 5, 5},
};

constexpr std::size_t kB = 2, kH = 3, kHs = 3;

AttentionOptions make_options(const Combo& c, Rng& rng) {
  AttentionOptions o;
  o.causal = c.causal;
  o.scale = c.scale;
  if (c.bias_heads) o.bias = randn({std::size_t(c.bias_batch), std::size_t(c.bias_heads), c.Tq, c.Tk}, rng);
  if (c.head_scale) o.head_scale = {real(0.5), real(1.3), real(-0.7)};
  return o;
}

}  // namespace

TEST_CASE("attention forward and probabilities match the naive reference", "[attention]") {
  Rng rng(11);
  for (const Combo& c : kCombos) {
    INFO(c.name);
    Tensor q = randn({kB, kH, c.Tq, kHs}, rng), k = randn({kB, kH, c.Tk, kHs}, rng), v = randn({kB, kH, c.Tk, kHs}, rng);
    Array probs;
    AttentionOptions o = make_options(c, rng);
    o.probs_out = &probs;
    Tensor y = attention(q, k, v, o);
    const Naive ref = naive_attention(q, k, v, o);
    REQUIRE(y.shape() == (Shape{kB, kH, c.Tq, kHs}));
    REQUIRE(y.numel() == ref.out.size());
    for (std::size_t i = 0; i < ref.out.size(); ++i) CHECK(y.data()[i] == Approx(ref.out[i]).margin(1e-12));
    REQUIRE(probs.shape() == (Shape{kB, kH, c.Tq, c.Tk}));
    REQUIRE(probs.size() == ref.probs.size());
    for (std::size_t i = 0; i < ref.probs.size(); ++i) CHECK(probs.data()[i] == Approx(ref.probs[i]).margin(1e-12));
    Tape::current().clear();
  }
}

TEST_CASE("attention probabilities: rows sum to one and masked entries are exactly zero", "[attention]") {
  Rng rng(12);
  const std::size_t Tq = 4, Tk = 6;
  Tensor q = randn({kB, kH, Tq, kHs}, rng, 3.0), k = randn({kB, kH, Tk, kHs}, rng, 3.0), v = randn({kB, kH, Tk, kHs}, rng);
  for (bool grad_mode : {true, false}) {
    INFO("grad mode " << grad_mode);
    Array probs;
    AttentionOptions o;
    o.probs_out = &probs;
    if (grad_mode) {
      attention(q, k, v, o);
    } else {
      NoGrad ng;
      attention(q, k, v, o);
    }
    REQUIRE(probs.shape() == (Shape{kB, kH, Tq, Tk}));
    for (std::size_t r = 0; r < kB * kH * Tq; ++r) {
      const std::size_t i = r % Tq;
      double sum = 0;
      for (std::size_t j = 0; j < Tk; ++j) {
        const real p = probs.data()[r * Tk + j];
        if (j > i + (Tk - Tq))
          CHECK(p == real(0));
        else
          CHECK(p > real(0));
        sum += p;
      }
      CHECK(sum == Approx(1.0).margin(1e-12));
    }
    Tape::current().clear();
  }
}

TEST_CASE("attention is stable for huge logits", "[attention]") {
  Rng rng(13);
  Tensor q = randn({1, 2, 3, 4}, rng, 1e3, false), k = randn({1, 2, 3, 4}, rng, 1e3, false), v = randn({1, 2, 3, 4}, rng, 1, false);
  for (bool causal : {true, false}) {
    AttentionOptions o;
    o.causal = causal;
    Tensor y = attention(q, k, v, o);
    const Naive ref = naive_attention(q, k, v, o);
    REQUIRE(y.numel() == ref.out.size());
    for (std::size_t i = 0; i < y.numel(); ++i) {
      CHECK(std::isfinite(y.data()[i]));
      CHECK(y.data()[i] == Approx(ref.out[i]).margin(1e-9));
    }
  }
}

TEST_CASE("attention gradients of q k v and bias for every option combination", "[attention][grad]") {
  Rng rng(14);
  for (const Combo& c : kCombos) {
    INFO(c.name);
    Tensor q = randn({kB, kH, c.Tq, kHs}, rng), k = randn({kB, kH, c.Tk, kHs}, rng), v = randn({kB, kH, c.Tk, kHs}, rng);
    const AttentionOptions o = make_options(c, rng);
    std::vector<Tensor> inputs = {q, k, v};
    if (o.bias.defined()) inputs.push_back(o.bias);
    auto r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          AttentionOptions oo = o;
          if (in.size() > 3) oo.bias = in[3];
          return attention(in[0], in[1], in[2], oo);
        },
        inputs);
    std::size_t expected = 0;
    for (const Tensor& t : inputs) expected += t.numel();
    CHECK(r.checked == expected);
  }
}

TEST_CASE("attention gradients when only some inputs require grad", "[attention][grad]") {
  Rng rng(15);
  const std::size_t Tq = 4, Tk = 5;
  for (int which = 0; which < 4; ++which) {  // only q, only k, only v, only bias
    INFO("only input " << which);
    Tensor q = randn({kB, kH, Tq, kHs}, rng, 1, which == 0), k = randn({kB, kH, Tk, kHs}, rng, 1, which == 1);
    Tensor v = randn({kB, kH, Tk, kHs}, rng, 1, which == 2), bias = randn({kB, kH, Tq, Tk}, rng, 1, which == 3);
    auto r = gradcheck(
        [](const std::vector<Tensor>& in) {
          AttentionOptions o;
          o.bias = in[3];
          return attention(in[0], in[1], in[2], o);
        },
        {q, k, v, bias});
    CHECK(r.checked == std::vector<std::size_t>{q.numel(), k.numel(), v.numel(), bias.numel()}[which]);
    CHECK(!(which != 0 && q.has_grad()));
  }
}

TEST_CASE("attention gradients accumulate across backward calls", "[attention][grad]") {
  Rng rng(16);
  Tensor q = randn({1, 2, 3, 2}, rng), k = randn({1, 2, 3, 2}, rng), v = randn({1, 2, 3, 2}, rng);
  Tape::current().clear();
  attention(q, k, v).backward(xt::ones<real>({1, 2, 3, 2}));
  const Array g1 = q.grad(), gv1 = v.grad();
  attention(q, k, v).backward(xt::ones<real>({1, 2, 3, 2}));
  REQUIRE(q.grad().size() == g1.size());
  for (std::size_t i = 0; i < g1.size(); ++i) CHECK(q.grad().data()[i] == Approx(2 * g1.data()[i]).margin(1e-12));
  for (std::size_t i = 0; i < gv1.size(); ++i) CHECK(v.grad().data()[i] == Approx(2 * gv1.data()[i]).margin(1e-12));
}

TEST_CASE("causal attention: later keys and values never change earlier outputs", "[attention]") {
  Rng rng(17);
  for (std::size_t Tq : {std::size_t(6), std::size_t(4)}) {
    const std::size_t Tk = 6, off = Tk - Tq;
    Tensor q = randn({kB, kH, Tq, kHs}, rng, 1, false), k = randn({kB, kH, Tk, kHs}, rng, 1, false);
    Tensor v = randn({kB, kH, Tk, kHs}, rng, 1, false);
    AttentionOptions o;
    o.bias = randn({1, 1, Tq, Tk}, rng, 1, false);
    const Tensor y0 = attention(q, k, v, o);
    for (std::size_t t = off + 1; t < Tk; ++t) {  // perturb key/value position t
      INFO("Tq " << Tq << " perturbed position " << t);
      Tensor k2 = k.detach(), v2 = v.detach(), bias2 = o.bias.detach();
      for (std::size_t bh = 0; bh < kB * kH; ++bh)
        for (std::size_t c = 0; c < kHs; ++c) {
          k2.mutable_data()[(bh * Tk + t) * kHs + c] += real(5);
          v2.mutable_data()[(bh * Tk + t) * kHs + c] -= real(7);
        }
      for (std::size_t i = 0; i < Tq; ++i) bias2.mutable_data()[i * Tk + t] += real(3);
      AttentionOptions o2 = o;
      o2.bias = bias2;
      const Tensor y1 = attention(q, k2, v2, o2);
      REQUIRE(y1.numel() == y0.numel());
      bool later_changed = false;
      for (std::size_t bh = 0; bh < kB * kH; ++bh)
        for (std::size_t i = 0; i < Tq; ++i)
          for (std::size_t c = 0; c < kHs; ++c) {
            const std::size_t idx = (bh * Tq + i) * kHs + c;
            if (i + off < t)
              CHECK(y1.data()[idx] == y0.data()[idx]);  // bit-identical
            else if (y1.data()[idx] != y0.data()[idx])
              later_changed = true;
          }
      CHECK(later_changed);  // the perturbation is visible where it should be
    }
  }
}

TEST_CASE("attention shape errors name the op and the shapes", "[attention][errors]") {
  Tensor q = Tensor::zeros({2, 3, 4, 5}), k = Tensor::zeros({2, 3, 6, 5}), v = Tensor::zeros({2, 3, 6, 5});
  CHECK_NOTHROW(attention(q, k, v));
  CHECK_THROWS_WITH(attention(Tensor::zeros({3, 4, 5}), k, v), Catch::Contains("attention") && Catch::Contains("(3, 4, 5)"));
  CHECK_THROWS_WITH(attention(q, Tensor::zeros({2, 3, 6, 4}), v),
                    Catch::Contains("attention") && Catch::Contains("(2, 3, 4, 5)") && Catch::Contains("(2, 3, 6, 4)"));
  CHECK_THROWS_WITH(attention(q, Tensor::zeros({2, 2, 6, 5}), v), Catch::Contains("attention"));
  CHECK_THROWS_WITH(attention(q, k, Tensor::zeros({2, 3, 5, 5})), Catch::Contains("attention") && Catch::Contains("(2, 3, 5, 5)"));
  CHECK_THROWS_WITH(attention(q, Tensor(), v), Catch::Contains("attention"));
  CHECK_THROWS_WITH(attention(q, Tensor::zeros({2, 3, 0, 5}), Tensor::zeros({2, 3, 0, 5})), Catch::Contains("attention"));
  // causal needs Tq <= Tk; non-causal does not
  CHECK_THROWS_WITH(attention(Tensor::zeros({2, 3, 7, 5}), k, v), Catch::Contains("attention") && Catch::Contains("Tq <= Tk"));
  AttentionOptions nc;
  nc.causal = false;
  CHECK_NOTHROW(attention(Tensor::zeros({2, 3, 7, 5}), k, v, nc));
  AttentionOptions o;
  o.bias = Tensor::zeros({1, 2, 4, 6});  // neither H nor 1 heads
  CHECK_THROWS_WITH(attention(q, k, v, o), Catch::Contains("attention") && Catch::Contains("bias") && Catch::Contains("(1, 2, 4, 6)"));
  o.bias = Tensor::zeros({3, 3, 4, 6});  // neither B nor 1 rows
  CHECK_THROWS_WITH(attention(q, k, v, o), Catch::Contains("bias") && Catch::Contains("(3, 3, 4, 6)"));
  o.bias = Tensor::zeros({1, 3, 6, 4});  // (Tk, Tq) swapped
  CHECK_THROWS_WITH(attention(q, k, v, o), Catch::Contains("bias") && Catch::Contains("(1, 3, 6, 4)"));
  o.bias = Tensor::zeros({3, 4, 6});  // the old 3-D form
  CHECK_THROWS_WITH(attention(q, k, v, o), Catch::Contains("bias") && Catch::Contains("B or 1, H or 1"));
  o.bias = Tensor::zeros({2, 1, 4, 6});
  CHECK_NOTHROW(attention(q, k, v, o));
  AttentionOptions hs;
  hs.head_scale = {1, 2};
  CHECK_THROWS_WITH(attention(q, k, v, hs), Catch::Contains("attention") && Catch::Contains("head_scale"));
}
