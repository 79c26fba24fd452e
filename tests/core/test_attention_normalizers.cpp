// The attention normalizers, the sliding window and chunked attention: stick-breaking weights against the
// product form of the definition (Tan et al. 2025), windows and chunks (Llama 4's
// create_chunked_attention_mask: same chunk and causal) against a naive masked softmax, gradients against central
// differences (q, k, v, bias, and Shaw's relative tables), and the option errors.
#include <cmath>
#include <limits>

#include "core/ops/attention.hpp"
#include "core/ops/stick_breaking.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

constexpr std::size_t kB = 2, kH = 2, kHs = 3;

// Logits (Tq, Tk) of block (b, h) in double: q k^T / sqrt(hs) + bias (per batch row and head).
std::vector<double> block_logits(const Tensor& q, const Tensor& k, const Tensor& bias, std::size_t b, std::size_t h) {
  const std::size_t H = q.size(1), Tq = q.size(2), Tk = k.size(2), hs = q.size(3);
  std::vector<double> z(Tq * Tk);
  for (std::size_t i = 0; i < Tq; ++i)
    for (std::size_t j = 0; j < Tk; ++j) {
      double dot = 0;
      for (std::size_t c = 0; c < hs; ++c)
        dot += double(q.data()[((b * H + h) * Tq + i) * hs + c]) * double(k.data()[((b * H + h) * Tk + j) * hs + c]);
      z[i * Tk + j] = dot / std::sqrt(double(hs)) + (bias.defined() ? double(bias.data()[((b * H + h) * Tq + i) * Tk + j]) : 0.0);
    }
  return z;
}

// The weights (B, H, Tq, Tk) from the definition: stick-breaking as a product of (1 - beta), or a
// softmax over the window's keys.
std::vector<double> naive_weights(const Tensor& q, const Tensor& k, const Tensor& bias, const AttentionOptions& o) {
  const std::size_t H = q.size(1), Tq = q.size(2), Tk = k.size(2), off = Tk - Tq;
  std::vector<double> w(q.size(0) * H * Tq * Tk, 0.0);
  for (std::size_t b = 0; b < q.size(0); ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const std::vector<double> z = block_logits(q, k, bias, b, h);
      double* out = w.data() + (b * H + h) * Tq * Tk;
      for (std::size_t i = 0; i < Tq; ++i) {
        const bool sb = o.normalizer == Normalizer::stick_breaking;
        const std::size_t end = i + off + (sb && !o.attend_current ? 0 : 1);
        std::size_t first = o.window && end > o.window ? end - o.window : 0;
        if (o.chunk) first = std::max(first, (i + off) / o.chunk * o.chunk);  // the query's own chunk
        first = std::min(first, end);
        auto beta = [&](std::size_t j) { return 1.0 / (1.0 + std::exp(-z[i * Tk + j])); };
        double sum = 0;
        for (std::size_t j = first; j < end; ++j) {
          if (sb) {
            double a = beta(j);
            for (std::size_t m = j + 1; m < end; ++m) a *= 1.0 - beta(m);
            out[i * Tk + j] = a;
          } else {
            sum += (out[i * Tk + j] = std::exp(z[i * Tk + j]));
          }
        }
        if (!sb)
          for (std::size_t j = first; j < end; ++j) out[i * Tk + j] /= sum;
      }
    }
  return w;
}

struct Case {
  const char* name;
  Normalizer normalizer;
  bool attend_current;
  std::size_t window, Tq, Tk;
  std::size_t chunk = 0;
};

const std::vector<Case> kCases = {
    {"stick-breaking", Normalizer::stick_breaking, false, 0, 5, 5},
    {"stick-breaking, attend current", Normalizer::stick_breaking, true, 0, 5, 5},
    {"stick-breaking, Tq < Tk", Normalizer::stick_breaking, false, 0, 3, 5},
    {"stick-breaking, window 2", Normalizer::stick_breaking, true, 2, 6, 6},
    {"softmax, window 1", Normalizer::softmax, false, 1, 4, 4},
    {"softmax, window 3", Normalizer::softmax, false, 3, 6, 6},
    {"softmax, window 2, Tq < Tk", Normalizer::softmax, false, 2, 3, 5},
    {"softmax, chunk 2", Normalizer::softmax, false, 0, 6, 6, 2},
    {"softmax, chunk 4, Tq < Tk", Normalizer::softmax, false, 0, 3, 7, 4},
    {"softmax, chunk 4 and window 2", Normalizer::softmax, false, 2, 7, 7, 4},
    {"softmax, chunk past the keys (plain causal)", Normalizer::softmax, false, 0, 5, 5, 9},
    {"stick-breaking, chunk 3", Normalizer::stick_breaking, false, 0, 7, 7, 3},
    {"stick-breaking, attend current, chunk 3, window 2", Normalizer::stick_breaking, true, 2, 7, 7, 3},
};

AttentionOptions options(const Case& c) {
  AttentionOptions o;
  o.normalizer = c.normalizer;
  o.attend_current = c.attend_current;
  o.window = c.window;
  o.chunk = c.chunk;
  return o;
}

}  // namespace

TEST_CASE("stick-breaking and windowed weights match the definition", "[attention][normalizer]") {
  Rng rng(31);
  for (const Case& c : kCases) {
    INFO(c.name);
    Tensor q = randn({kB, kH, c.Tq, kHs}, rng), k = randn({kB, kH, c.Tk, kHs}, rng), v = randn({kB, kH, c.Tk, kHs}, rng);
    Tensor bias = randn({kB, kH, c.Tq, c.Tk}, rng);
    AttentionOptions o = options(c);
    o.bias = bias;
    Array probs;
    o.probs_out = &probs;
    Tensor y = attention(q, k, v, o);
    const std::vector<double> w = naive_weights(q, k, bias, o);
    REQUIRE(probs.size() == w.size());
    for (std::size_t i = 0; i < w.size(); ++i) CHECK(probs.data()[i] == Approx(w[i]).margin(1e-12));
    // out = P v, and stick-breaking's rows sum to at most 1 (the first query sees nothing without the diagonal)
    for (std::size_t bh = 0; bh < kB * kH; ++bh)
      for (std::size_t i = 0; i < c.Tq; ++i) {
        double row = 0;
        for (std::size_t j = 0; j < c.Tk; ++j) row += w[(bh * c.Tq + i) * c.Tk + j];
        CHECK(row <= 1 + 1e-12);
        for (std::size_t d = 0; d < kHs; ++d) {
          double o_ref = 0;
          for (std::size_t j = 0; j < c.Tk; ++j) o_ref += w[(bh * c.Tq + i) * c.Tk + j] * double(v.data()[(bh * c.Tk + j) * kHs + d]);
          CHECK(y.data()[(bh * c.Tq + i) * kHs + d] == Approx(o_ref).margin(1e-12));
        }
      }
    Tape::current().clear();
  }
}

TEST_CASE("stick-breaking and windowed attention: gradients of q, k, v and bias", "[attention][normalizer][grad]") {
  Rng rng(32);
  for (const Case& c : kCases) {
    INFO(c.name);
    Tensor q = randn({kB, kH, c.Tq, kHs}, rng), k = randn({kB, kH, c.Tk, kHs}, rng), v = randn({kB, kH, c.Tk, kHs}, rng);
    Tensor bias = randn({1, kH, c.Tq, c.Tk}, rng);  // shared by the batch: its gradient sums two blocks
    const AttentionOptions o = options(c);
    auto r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          AttentionOptions oo = o;
          oo.bias = in[3];
          return attention(in[0], in[1], in[2], oo);
        },
        {q, k, v, bias});
    CHECK(r.checked == q.numel() + k.numel() + v.numel() + bias.numel());
  }
}

TEST_CASE("stick-breaking with Shaw's relative keys and values: gradients", "[attention][normalizer][grad]") {
  Rng rng(33);
  const std::size_t T = 5, R = 4;
  Tensor q = randn({kB, kH, T, kHs}, rng), k = randn({kB, kH, T, kHs}, rng), v = randn({kB, kH, T, kHs}, rng);
  Tensor ak = randn({R, kHs}, rng), av = randn({R, kHs}, rng);
  auto index = std::make_shared<IndexArray>(IndexArray::shape_type{1, T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j) (*index)(0, i, j) = std::int32_t(std::min<std::size_t>(i > j ? i - j : 0, R - 1));
  auto r = gradcheck(
      [&](const std::vector<Tensor>& in) {
        AttentionOptions o;
        o.normalizer = Normalizer::stick_breaking;
        o.window = 3;
        o.rel = RelativeKV{index, in[3], in[4]};
        return attention(in[0], in[1], in[2], o);
      },
      {q, k, v, ak, av});
  CHECK(r.checked == q.numel() + k.numel() + v.numel() + ak.numel() + av.numel());
}

TEST_CASE("stick-breaking is stable for huge logits", "[attention][normalizer]") {
  Rng rng(34);
  Tensor q = randn({1, 1, 6, kHs}, rng, 300.0), k = randn({1, 1, 6, kHs}, rng, 300.0), v = randn({1, 1, 6, kHs}, rng);
  AttentionOptions o;
  o.normalizer = Normalizer::stick_breaking;
  o.attend_current = true;
  Tensor y = attention(q, k, v, o);
  for (std::size_t i = 0; i < y.numel(); ++i) CHECK(std::isfinite(y.data()[i]));
  Tape::current().clear();
}

TEST_CASE("normalizer and window errors name the op and the option", "[attention][normalizer][errors]") {
  Rng rng(35);
  Tensor q = randn({1, 1, 3, 2}, rng);
  AttentionOptions sb;
  sb.causal = false;
  sb.normalizer = Normalizer::stick_breaking;
  CHECK_THROWS_WITH(attention(q, q, q, sb), Catch::Contains("attention") && Catch::Contains("stick-breaking"));
  AttentionOptions win;
  win.causal = false;
  win.window = 2;
  CHECK_THROWS_WITH(attention(q, q, q, win), Catch::Contains("attention") && Catch::Contains("window"));
  Tape::current().clear();
}

TEST_CASE("attention with q and k wider than v (PoPE): forward, default scale and gradients", "[attention][grad]") {
  Rng rng(36);
  const std::size_t T = 5, hs = 6, hv = 3;
  Tensor q = randn({kB, kH, T, hs}, rng), k = randn({kB, kH, T, hs}, rng), v = randn({kB, kH, T, hv}, rng);
  Tensor bias = randn({kB, kH, T, T}, rng);
  AttentionOptions o;
  o.bias = bias;
  Array probs;
  o.probs_out = &probs;
  Tensor y = attention(q, k, v, o);
  REQUIRE(y.shape() == (Shape{kB, kH, T, hv}));
  // the weights are the softmax of q k^T / sqrt(hv) + bias: v's head size, the model's
  for (std::size_t bh = 0; bh < kB * kH; ++bh)
    for (std::size_t i = 0; i < T; ++i) {
      std::vector<double> z(i + 1);
      double mx = -1e300, sum = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (std::size_t c = 0; c < hs; ++c) dot += double(q.data()[(bh * T + i) * hs + c]) * double(k.data()[(bh * T + j) * hs + c]);
        z[j] = dot / std::sqrt(double(hv)) + double(bias.data()[(bh * T + i) * T + j]);
        mx = std::max(mx, z[j]);
      }
      for (double& x : z) sum += (x = std::exp(x - mx));
      for (std::size_t j = 0; j <= i; ++j) CHECK(probs.data()[(bh * T + i) * T + j] == Approx(z[j] / sum).margin(1e-12));
    }
  Tape::current().clear();
  auto r = gradcheck(
      [&](const std::vector<Tensor>& in) {
        AttentionOptions oo;
        oo.bias = in[3];
        return attention(in[0], in[1], in[2], oo);
      },
      {q, k, v, bias});
  CHECK(r.checked == q.numel() + k.numel() + v.numel() + bias.numel());
}
