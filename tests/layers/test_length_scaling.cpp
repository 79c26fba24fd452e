// Length extension and attention scaling (docs/encodings.md): RoPE's pi / ntk / dynamic_ntk / yarn against
// independent values (hand-computed, see the comments), and [attention] scaling in the model.
#include <cmath>

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include "core/ops/rotary.hpp"
#include "layers/attention_scaling.hpp"
#include "layers/positional/rope_scaling.hpp"
#include "model_helpers.hpp"

using namespace pelab;
using pelab::test::make_model;
using pelab::test::random_tokens;
using pelab::test::small_config;

namespace {

const double kPi = std::acos(-1.0);

// q, k (1, 1, T, hs) rotated by a rope encoding with `params` at positions `pos` (1, T).
Tensor rope_q(const std::map<std::string, Value>& params, const IndexArray& pos, const Tensor& q0) {
  ModelConfig c = small_config("rope", params);
  c.d_model = 8;
  c.n_heads = 1;  // hs = 8
  const Params p = resolve_encoding_params("rope", c.encoding_params, c.dims());
  auto enc = make_encoding("rope", p, c.dims());
  Tensor q = q0, k = q0;
  enc->begin_forward(pos);
  enc->encode_qk(q, k, AttentionContext{pos, 0, true});
  return q;
}

IndexArray ids(std::vector<std::int32_t> v) {
  IndexArray p(Shape{1, v.size()});
  for (std::size_t i = 0; i < v.size(); ++i) p(0, i) = v[i];
  return p;
}

}  // namespace

TEST_CASE("NTK-aware base change: base * s^(d/(d-2)), highest frequency kept, lowest divided by s", "[rope_scaling]") {
  // 10000 * 4^(16/14) = 48760.546... (Python: 10000 * 4 ** (16 / 14))
  CHECK(ntk_base(10000, 4, 16) == Approx(48760.54616817902).epsilon(1e-12));
  RopeScaling sc;
  sc.method = "ntk";
  sc.factor = 4;
  const auto plain = rotary_inv_freq(16, 10000), ntk = scaled_rope_inv_freq(16, 10000, sc, 64);
  REQUIRE(ntk.size() == 8);
  CHECK(ntk[0] == plain[0]);
  // theta_last = base'^(-14/16) = (base^(-14/16)) * s^(-1): exactly interpolated by s
  CHECK(ntk[7] == Approx(plain[7] / 4).epsilon(1e-12));
  CHECK(ntk[3] > plain[3] / 4);
  CHECK(ntk[3] < plain[3]);
}

TEST_CASE("position interpolation: theta_i / s, i.e. positions p / s", "[rope_scaling]") {
  RopeScaling sc;
  sc.method = "pi";
  sc.factor = 2;
  const auto plain = rotary_inv_freq(8, 100), pi = scaled_rope_inv_freq(8, 100, sc, 0);
  for (std::size_t i = 0; i < 4; ++i) CHECK(pi[i] == Approx(plain[i] / 2).epsilon(1e-15));
  // Through the encoding: pi with factor 2 at positions 2p rotates exactly as plain rope at p.
  Rng rng(1);
  Tensor q0(Array(Shape{1, 1, 4, 8}), false);
  for (auto& v : q0.mutable_value()) v = static_cast<real>(rng.normal());
  const Tensor a = rope_q({{"scaling", Value(std::string("pi"))}, {"factor", Value(2.0)}}, ids({0, 6, 14, 40}), q0);
  const Tensor b = rope_q({}, ids({0, 3, 7, 20}), q0);
  REQUIRE(a.shape() == b.shape());
  for (std::size_t i = 0; i < a.numel(); ++i) CHECK(a.data()[i] == Approx(b.data()[i]).margin(1e-5));
  // and it is not the identity: plain rope at 2p differs
  const Tensor c = rope_q({}, ids({0, 6, 14, 40}), q0);
  double diff = 0;
  for (std::size_t i = 0; i < a.numel(); ++i) diff = std::max(diff, double(std::abs(a.data()[i] - c.data()[i])));
  CHECK(diff > 1e-2);
}

TEST_CASE("dynamic NTK's factor from the current length: factor * n / L - (factor - 1) beyond L", "[rope_scaling]") {
  CHECK(dynamic_ntk_factor(1, 64, 64) == 1);
  CHECK(dynamic_ntk_factor(1, 32, 64) == 1);
  CHECK(dynamic_ntk_factor(1, 128, 64) == 2);
  CHECK(dynamic_ntk_factor(2, 128, 64) == 3);       // 2 * 2 - 1
  CHECK(dynamic_ntk_factor(1, 96, 64) == 1.5);
  RopeScaling sc;
  sc.method = "dynamic_ntk";
  sc.factor = 1;
  sc.original_len = 64;
  CHECK(scaled_rope_inv_freq(16, 10000, sc, 64) == rotary_inv_freq(16, 10000));  // within L: plain
  CHECK(scaled_rope_inv_freq(16, 10000, sc, 256) == rotary_inv_freq(16, ntk_base(10000, 4, 16)));
}

TEST_CASE("YaRN: ramp per frequency on r = L / wavelength, and the temperature 0.1 ln s + 1", "[rope_scaling]") {
  CHECK(yarn_ramp(0.5, 1, 32) == 0);
  CHECK(yarn_ramp(40, 1, 32) == 1);
  CHECK(yarn_ramp(16.5, 1, 32) == 0.5);
  CHECK(yarn_mscale(4, 0.1) == Approx(1.138629436111989).epsilon(1e-14));  // 0.1 ln 4 + 1
  CHECK(yarn_mscale(1, 0.1) == 1);
  RopeScaling sc;
  sc.method = "yarn";
  sc.factor = 4;
  sc.original_len = 64;
  // rot 16, base 10000: theta_i = 10^(-i/2). Hand values (alpha 1, beta 32):
  //   i = 0: theta 1, r = 64 / (2 pi) = 10.1859, g = (r - 1) / 31 = 0.296320, theta' = (1 - g) / 4 + g = 0.472240
  //   i = 2: theta 0.1, r = 1.01859, g = 0.00059973, theta' = 0.0250450
  //   i = 3: r = 0.3221 < alpha: fully interpolated, theta / 4
  const auto y = scaled_rope_inv_freq(16, 10000, sc, 0);
  REQUIRE(y.size() == 8);
  CHECK(64.0 / (2 * kPi) == Approx(10.185916357881302));
  CHECK(y[0] == Approx(0.47223991188422504).epsilon(1e-12));
  CHECK(y[2] == Approx(0.025044979764003543).epsilon(1e-12));
  CHECK(y[3] == Approx(std::pow(10.0, -1.5) / 4).epsilon(1e-14));
  // beta 8: r_0 = 10.19 > beta, so the highest frequency is kept exactly
  sc.beta = 8;
  CHECK(scaled_rope_inv_freq(16, 10000, sc, 0)[0] == 1.0);
  CHECK(rope_table_scale(sc) == Approx(1.138629436111989));
  // Through the encoding: q's rotated norm grows by mscale (logits by mscale^2).
  Rng rng(2);
  Tensor q0(Array(Shape{1, 1, 3, 8}), false);
  for (auto& v : q0.mutable_value()) v = static_cast<real>(rng.normal());
  const Tensor q = rope_q({{"scaling", Value(std::string("yarn"))}, {"factor", Value(4.0)}, {"original_len", Value(std::int64_t(64))}},
                          ids({0, 1, 100}), q0);
  for (std::size_t t = 0; t < 3; ++t) {
    double n0 = 0, n1 = 0;
    for (std::size_t d = 0; d < 8; ++d) {
      n0 += std::pow(double(q0.value()(0, 0, t, d)), 2);
      n1 += std::pow(double(q.value()(0, 0, t, d)), 2);
    }
    CHECK(std::sqrt(n1 / n0) == Approx(1.138629436111989).epsilon(1e-5));
  }
}

TEST_CASE("rope scaling settings are range-checked", "[rope_scaling][config]") {
  const ModelDims dims = small_config("rope").dims();
  CHECK_THROWS_WITH(resolve_encoding_params("rope", {{"scaling", Value(std::string("yarm"))}}, dims), Catch::Contains("yarn"));
  CHECK_THROWS_WITH(resolve_encoding_params("rope", {{"factor", Value(0.5)}}, dims), Catch::Contains("factor"));
  CHECK_THROWS_WITH(resolve_encoding_params("rope", {{"scaling", Value(std::string("yarn"))}, {"yarn_alpha", Value(40.0)}}, dims),
                    Catch::Contains("yarn_alpha") && Catch::Contains("yarn_beta"));
  ModelConfig c = small_config("rope", {{"scaling", Value(std::string("ntk"))}, {"fraction", Value(0.25)}});  // hs 8: 2 rotated
  CHECK_THROWS_WITH(resolve_encoding_params("rope", c.encoding_params, c.dims()), Catch::Contains("at least 4"));
}

TEST_CASE("log-length scale: log n / log L, floored at 1 with clamp, n counts keys (1-based)", "[attention_scaling]") {
  CHECK(log_length_scale(256, 64, true) == Approx(8.0 / 6.0));  // log2 256 / log2 64
  CHECK(log_length_scale(8, 64, true) == 1);
  CHECK(log_length_scale(8, 64, false) == Approx(0.5));
  CHECK(log_length_scale(1, 64, false) == 0);
  AttentionScalingSettings s;
  s.scaling = "log_length";
  s.temperature = 2;
  const auto rows = query_row_scales(s, 5, true, 4);  // n = 1..5, L = 4, clamped, / 2
  REQUIRE(rows->size() == 5);
  CHECK((*rows)[0] == Approx(0.5));
  CHECK((*rows)[3] == Approx(0.5));
  CHECK((*rows)[4] == Approx(std::log(5.0) / std::log(4.0) / 2));
  const auto bidir = query_row_scales(s, 5, false, 4);  // every query sees all 5 keys
  CHECK((*bidir)[0] == Approx(std::log(5.0) / std::log(4.0) / 2));
  s.scaling = "none";
  CHECK(query_row_scales(s, 5, true, 4) == nullptr);
}

TEST_CASE("attention scaling in the model: log_length is the identity within L, fixed and learned change the logits",
          "[attention_scaling]") {
  Rng rng(3);
  for (const std::string enc : {"none", "rope", "alibi"}) {
    INFO(enc);
    ModelConfig base = small_config(enc);  // train_seq_len 16
    const IndexArray tok = random_tokens(2, 24, base.vocab, rng);
    const IndexArray in_tok = xt::view(tok, xt::all(), xt::range(0, 16));
    auto logits = [&](const ModelConfig& c, const IndexArray& t) {
      auto m = make_model(c, 7);
      return m->forward(t, default_positions(t.shape()[0], t.shape()[1])).value();
    };
    const Array ref_in = logits(base, in_tok), ref_out = logits(base, tok);
    ModelConfig ll = base;
    ll.attention.scaling = "log_length";
    CHECK((logits(ll, in_tok) == ref_in));  // clamped: exactly 1 for n <= 16
    const Array out = logits(ll, tok);
    // rows < 16 unchanged, rows beyond differ
    CHECK(xt::allclose(xt::view(out, xt::all(), xt::range(0, 16)), xt::view(ref_out, xt::all(), xt::range(0, 16))));
    CHECK(!xt::allclose(xt::view(out, xt::all(), xt::range(16, 24)), xt::view(ref_out, xt::all(), xt::range(16, 24))));
    ModelConfig fx = base;
    fx.attention.scaling = "fixed";
    fx.attention.temperature = 0.5;
    CHECK(!xt::allclose(logits(fx, in_tok), ref_in));
    ModelConfig lr = base;
    lr.attention.scaling = "learned";
    CHECK(xt::allclose(logits(lr, in_tok), ref_in));  // exp(0) = 1 at initialization (temperature 1)
    auto m = make_model(lr, 7);
    bool found = false;
    for (const auto& p : m->parameters())
      if (p.name == "blocks.1.attn.log_scale") found = p.tensor.shape() == Shape{2};
    CHECK(found);
  }
}

TEST_CASE("attention scaling settings are checked", "[attention_scaling][config]") {
  ModelConfig c = small_config("none");
  c.attention.temperature = 2;
  CHECK_THROWS_WITH(Transformer(c), Catch::Contains("attention.temperature") && Catch::Contains("fixed"));
  c.attention.scaling = "cold";
  CHECK_THROWS_WITH(Transformer(c), Catch::Contains("attention.scaling"));
  c = small_config("none");
  c.attention.scaling = "log_length";
  c.train_seq_len = 1;
  CHECK_THROWS_WITH(Transformer(c), Catch::Contains("L >= 2"));
}
