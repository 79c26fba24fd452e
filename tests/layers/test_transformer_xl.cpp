// Transformer-XL's relative encoding (layers/positional/transformer_xl.cpp) beyond what every encoding gets
// (test_parity.cpp's fixtures, test_encoding_properties.cpp, test_streaming_forward.cpp): its bias against
// Dai et al.'s four terms written out in double at every pair (DeepMind's causal distance p_i - p_j + 1,
// negative distances when bidirectional), query tiles against the whole bias, gradients reaching W_R, u, v,
// q and k, and PyTorch parity at 1x, 2x and 4x the fixture's training length.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "core/ops/elementwise.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/shape.hpp"
#include "core/tape.hpp"
#include "model_helpers.hpp"
#include "parity_fixture.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

Tensor random_tensor(const Shape& s, Rng& rng, bool grad = false) {
  Array a(s);
  for (auto& x : a) x = static_cast<real>(rng.normal());
  return Tensor(std::move(a), grad);
}

// A bare encoding for a (H, hs) model with L layers, every parameter drawn from N(0, 1).
std::unique_ptr<PositionalEncoding> make_xl(std::size_t H, std::size_t hs, bool causal, double base, Rng& rng) {
  ModelDims d;
  d.n_heads = H;
  d.head_dim = hs;
  d.d_model = H * hs;
  d.n_layers = 2;
  d.train_seq_len = d.max_position = 16;
  d.causal = causal;
  const Params p = resolve_encoding_params("transformer_xl", {{"base", Value(base)}}, d);
  auto e = make_encoding("transformer_xl", p, d);
  for (const auto& prm : e->parameters())
    for (auto& x : Tensor(prm.tensor).mutable_value()) x = static_cast<real>(rng.normal());
  return e;
}

// Dai et al. Section 3.3, one pair in double: ((q_i + v) . W_R^h R_d + u . k_j) / sqrt(hs), R_d the sinusoid
// [sin(d w_0..w_{m-1}), cos(d w_0..w_{m-1})], w_f = base^(-2f / (H hs)).
double expected(const PositionalEncoding& e, std::size_t layer, const Array& q, const Array& k, std::size_t b,
                std::size_t h, std::size_t i, std::size_t j, double d, double base) {
  const std::string pre = "layers." + std::to_string(layer) + ".";
  Array w, u, v;
  for (const auto& p : e.parameters()) {
    if (p.name == pre + "weight") w = p.tensor.value();  // (H hs, 2m)
    if (p.name == pre + "u") u = p.tensor.value();       // (H, hs)
    if (p.name == pre + "v") v = p.tensor.value();
  }
  const std::size_t hs = u.shape()[1], D = u.shape()[0] * hs, m = w.shape()[1] / 2;
  double out = 0;
  for (std::size_t c = 0; c < hs; ++c) {
    double r = 0;  // (W_R R_d) at row h hs + c
    for (std::size_t f = 0; f < m; ++f) {
      const double a = d * std::pow(base, -2.0 * double(f) / double(D));
      r += double(w(h * hs + c, f)) * std::sin(a) + double(w(h * hs + c, m + f)) * std::cos(a);
    }
    out += (double(q(b, h, i, c)) + double(v(h, c))) * r + double(u(h, c)) * double(k(b, h, j, c));
  }
  return out / std::sqrt(double(hs));
}

}  // namespace

TEST_CASE("transformer_xl's bias is (q_i + v) . W_R R_d + u . k_j over sqrt(hs), d = p_i - p_j (+1 causal)",
          "[positional][transformer_xl]") {
  const std::size_t B = 2, H = 3, hs = 5, T = 7;  // d_model 15: odd, 8 frequencies as DeepMind's arange(0, 15, 2)
  IndexArray pos(Shape{B, T});
  const std::int32_t row1[T] = {3, 4, 9, 10, 11, 20, 31};  // gaps and an offset: distances up to 28
  for (std::size_t t = 0; t < T; ++t) pos(0, t) = std::int32_t(t), pos(1, t) = row1[t];
  for (bool causal : {true, false}) {
    INFO((causal ? "causal" : "bidirectional"));
    Rng rng(21);
    const double base = causal ? 10000.0 : 50.0;
    auto e = make_xl(H, hs, causal, base, rng);
    REQUIRE(e->num_parameters() == 2 * (H * hs * 16 + 2 * H * hs));
    const Tensor q = random_tensor({B, H, T, hs}, rng), k = random_tensor({B, H, T, hs}, rng);
    const Array bias = e->attention_bias(q, k, {pos, 1, false}).value();
    REQUIRE(bias.shape() == Shape{B, H, T, T});
    std::size_t negative = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < T; ++i)
          for (std::size_t j = 0; j < (causal ? i + 1 : T); ++j) {
            const double d = double(pos(b, i)) - double(pos(b, j)) + (causal ? 1 : 0);
            negative += d < 0;
            const double want = expected(*e, 1, q.value(), k.value(), b, h, i, j, d, base);
            INFO("b " << b << " h " << h << " i " << i << " j " << j << " d " << d);
            CHECK(bias(b, h, i, j) == Approx(want).epsilon(1e-4).margin(1e-4));
          }
    CHECK((negative > 0) == !causal);  // keys after the query have negative distances of their own
  }
}

TEST_CASE("transformer_xl: a query tile's bias without a tape is those rows of the taped bias, per-row ids included",
          "[positional][transformer_xl]") {
  const std::size_t B = 2, H = 2, hs = 4, T = 9;
  IndexArray pos(Shape{B, T});
  for (std::size_t t = 0; t < T; ++t) pos(0, t) = std::int32_t(t), pos(1, t) = std::int32_t(5 + 3 * t);
  for (bool causal : {true, false}) {
    INFO((causal ? "causal" : "bidirectional"));
    Rng rng(22);
    auto e = make_xl(H, hs, causal, 10000.0, rng);
    const Tensor q = random_tensor({B, H, T, hs}, rng), k = random_tensor({B, H, T, hs}, rng);
    const Array full = e->attention_bias(q, k, {pos, 0, false}).value();  // taped: the gather on the index
    Tape::current().clear();
    NoGrad ng;  // without a tape: gathered straight into the bias
    const Array untaped = e->attention_bias(q, k, {pos, 0, false}).value();
    double whole = 0;
    for (std::size_t n = 0; n < full.size(); ++n) whole = std::max(whole, double(std::abs(untaped.data()[n] - full.data()[n])));
    CHECK(whole < 1e-5);  // masked pairs included: both clamp them to the same edge of the range
    for (std::size_t begin : {std::size_t(0), std::size_t(4)}) {  // the layer's first tile, then a later one
      AttentionContext ctx{pos, 0, false};
      ctx.tile = {begin, begin + 5, T};
      const Array tile = e->attention_bias(slice(q, 2, begin, begin + 5), k, ctx).value();
      REQUIRE(tile.shape() == Shape{B, H, 5, T});
      double worst = 0;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t i = 0; i < 5; ++i)
            for (std::size_t j = 0; j < (causal ? begin + i + 1 : T); ++j)
              worst = std::max(worst, double(std::abs(tile(b, h, i, j) - full(b, h, begin + i, j))));
      INFO("tile from " << begin);
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("transformer_xl: the bias's gradient reaches W_R, u, v of its layer only, and q and k",
          "[positional][transformer_xl]") {
  Rng rng(23);
  auto e = make_xl(2, 4, true, 10000.0, rng);
  const Tensor q = random_tensor({2, 2, 6, 4}, rng, true), k = random_tensor({2, 2, 6, 4}, rng, true);
  const IndexArray pos = default_positions(2, 6, 3);
  Tape::current().clear();
  const Tensor w = random_tensor({2, 2, 6, 6}, rng);
  sum(e->attention_bias(q, k, {pos, 1, true}) * w).backward();
  auto norm = [](const Array& g) {
    double s = 0;
    for (real x : g) s += double(x) * double(x);
    return std::sqrt(s);
  };
  for (const auto& p : e->parameters()) {
    INFO(p.name);
    if (p.name.rfind("layers.1.", 0) == 0)
      CHECK(norm(p.tensor.grad()) > 1e-3);
    else
      CHECK((!p.tensor.has_grad() || norm(p.tensor.grad()) == 0));
  }
  CHECK(norm(q.grad()) > 1e-3);
  CHECK(norm(k.grad()) > 1e-3);  // through u . k_j
  Tape::current().clear();
}

TEST_CASE("transformer_xl matches its PyTorch twin at 1x, 2x and 4x the fixture's training length",
          "[positional][transformer_xl][parity]") {
  std::size_t lengths = 0;
  for (const char* name : {"model_transformer_xl", "model_transformer_xl_bidir"}) lengths += check_long_logits(name);
  CHECK(lengths == 6);
}
