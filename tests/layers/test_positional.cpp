// Properties of the positional encodings, each stated as a test that fails when the property breaks.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/ops/rotary.hpp"
#include "core/tape.hpp"
#include "layers/positional/sinusoidal.hpp"
#include "model_helpers.hpp"

using namespace pelab;
using namespace pelab::test;

TEST_CASE("the registry knows the encodings and explains unknown names", "[positional]") {
  const auto names = EncodingRegistry::instance().names();
  for (const char* n : {"none", "learned", "sinusoidal", "rope", "alibi", "t5", "kerple", "fire"})
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  CHECK_THROWS_WITH(EncodingRegistry::instance().get("rop"), Catch::Contains("did you mean 'rope'"));
  CHECK_THROWS_WITH(resolve_encoding_params("rope", {{"layot", Value(std::string("half"))}}, small_config("rope").dims()),
                    Catch::Contains("unknown key 'layot'") && Catch::Contains("layout"));
  CHECK_THROWS_WITH(resolve_encoding_params("rope", {{"layout", Value(std::string("spiral"))}}, small_config("rope").dims()),
                    Catch::Contains("interleaved, half"));
  CHECK_THROWS_WITH(resolve_encoding_params("sinusoidal", {{"base", Value(std::string("x"))}}, small_config("sinusoidal").dims()),
                    Catch::Contains("base"));
}

TEST_CASE("sinusoidal values equal the formula", "[positional][sinusoidal]") {
  const std::size_t d = 8;
  IndexArray pos(Shape{1, 40});
  for (int t = 0; t < 40; ++t) pos(0, t) = t;
  Array pe = sinusoidal_table(pos, d, 10000.0);
  REQUIRE(pe.shape() == Shape{1, 40, d});
  for (int t = 0; t < 40; ++t)
    for (std::size_t i = 0; i < d / 2; ++i) {
      const double w = 1.0 / std::pow(10000.0, 2.0 * i / d);
      CHECK(pe(0, t, 2 * i) == Approx(std::sin(t * w)).margin(1e-6));
      CHECK(pe(0, t, 2 * i + 1) == Approx(std::cos(t * w)).margin(1e-6));
    }
}

TEST_CASE("sinusoidal PE(t+k) = R_k PE(t) with a block rotation independent of t", "[positional][sinusoidal]") {
  const std::size_t d = 16;
  IndexArray pos(Shape{1, 200});
  for (int t = 0; t < 200; ++t) pos(0, t) = t;
  const Array pe = sinusoidal_table(pos, d, 10000.0);
  for (int k : {1, 3, 17, 60}) {
    double worst = 0;
    for (int t = 0; t + k < 200; ++t)
      for (std::size_t i = 0; i < d / 2; ++i) {
        const double w = 1.0 / std::pow(10000.0, 2.0 * i / d);
        // R_k block for pair i: [[cos kw, sin kw], [-sin kw, cos kw]] applied to (sin tw, cos tw)
        const double s = pe(0, t, 2 * i), c = pe(0, t, 2 * i + 1);
        const double s2 = std::cos(k * w) * s + std::sin(k * w) * c;
        const double c2 = -std::sin(k * w) * s + std::cos(k * w) * c;
        worst = std::max({worst, std::abs(s2 - pe(0, t + k, 2 * i)), std::abs(c2 - pe(0, t + k, 2 * i + 1))});
      }
    INFO("k = " << k);
    CHECK(worst < 2e-5);
  }
}

namespace {
// Rotates one head vector (1, 1, 1, hs) at position p.
Array rotate_at(const Array& v, int p, RotaryLayout layout) {
  IndexArray pos(Shape{1, 1});
  pos(0, 0) = p;
  const std::size_t hs = v.size();
  auto tb = std::make_shared<RotaryTables>(rotary_tables(pos, hs, 10000.0));
  Array x4(Shape{1, 1, 1, hs});
  std::copy(v.begin(), v.end(), x4.begin());
  return rotary(Tensor(x4), tb, layout).value();
}
double dot(const Array& a, const Array& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * double(b.data()[i]);
  return s;
}
}  // namespace

TEST_CASE("RoPE preserves norms and <R_m q, R_n k> depends only on n - m", "[positional][rope]") {
  Rng rng(5);
  const std::size_t hs = 16;
  Array q(Shape{hs}), k(Shape{hs});
  for (auto& v : q) v = static_cast<real>(rng.normal());
  for (auto& v : k) v = static_cast<real>(rng.normal());
  for (auto layout : {RotaryLayout::interleaved, RotaryLayout::half}) {
    for (int m : {0, 5, 77, 1000}) CHECK(std::sqrt(dot(rotate_at(q, m, layout), rotate_at(q, m, layout))) ==
                                         Approx(std::sqrt(dot(q, q))).epsilon(1e-5));
    for (int delta : {-9, 0, 4, 31}) {
      const double ref = dot(rotate_at(q, 0, layout), rotate_at(k, delta, layout));
      double worst = 0;
      for (int m = 0; m < 300; m += 7) {
        if (m + delta < 0) continue;
        worst = std::max(worst, std::abs(dot(rotate_at(q, m, layout), rotate_at(k, m + delta, layout)) - ref));
      }
      INFO("delta " << delta);
      CHECK(worst < 1e-4 * std::max(1.0, std::abs(ref)));
    }
    // and it does depend on the offset
    CHECK(std::abs(dot(rotate_at(q, 0, layout), rotate_at(k, 1, layout)) - dot(q, k)) > 1e-3);
  }
}

TEST_CASE("RoPE interleaved and half layouts give identical outputs once q and k weights are permuted", "[positional][rope]") {
  auto inter = make_model(small_config("rope", {{"layout", Value(std::string("interleaved"))}}), 3);
  auto half = make_model(small_config("rope", {{"layout", Value(std::string("half"))}}), 4);
  const std::size_t d = 16, H = 2, hs = d / H, P = hs / 2;
  const auto pi = inter->parameters(), ph = half->parameters();
  REQUIRE(pi.size() == ph.size());
  for (std::size_t n = 0; n < pi.size(); ++n) {
    REQUIRE(pi[n].name == ph[n].name);
    Array v = pi[n].tensor.value();
    const bool qkv = pi[n].name.find("attn.qkv.") != std::string::npos;
    if (qkv) {
      // half-layout dim j of a head holds interleaved dim 2j (j < P) or 2(j-P)+1 (j >= P); q and k only
      const bool is_w = v.dimension() == 2;
      Array src = v;
      for (std::size_t part = 0; part < 2; ++part)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t j = 0; j < hs; ++j) {
            const std::size_t from = part * d + h * hs + (j < P ? 2 * j : 2 * (j - P) + 1);
            const std::size_t to = part * d + h * hs + j;
            if (is_w)
              for (std::size_t col = 0; col < d; ++col) v(to, col) = src(from, col);
            else
              v(to) = src(from);
          }
    }
    Tensor t = ph[n].tensor;
    t.mutable_value() = v;
  }
  Rng rng(9);
  const IndexArray tok = random_tokens(2, 10, 11, rng), pos = default_positions(2, 10, 3);
  NoGrad ng;
  const Array a = inter->forward(tok, pos).value(), b = half->forward(tok, pos).value();
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a.data()[i] - b.data()[i])));
  CHECK(worst < 1e-4);
  // without the permutation they differ: the test can fail
  auto half2 = make_model(small_config("rope", {{"layout", Value(std::string("half"))}}), 3);
  const Array c = half2->forward(tok, pos).value();
  double diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff = std::max(diff, double(std::abs(a.data()[i] - c.data()[i])));
  CHECK(diff > 1e-3);
}

TEST_CASE("NoPE is permutation-equivariant with bidirectional attention and not with causal", "[positional][nope]") {
  Rng rng(12);
  const std::size_t B = 1, T = 8;
  const IndexArray tok = random_tokens(B, T, 11, rng), pos = default_positions(B, T);
  const std::vector<std::size_t> perm = {3, 0, 7, 1, 6, 2, 5, 4};
  IndexArray ptok = tok;
  for (std::size_t t = 0; t < T; ++t) ptok(0, t) = tok(0, perm[t]);
  for (bool causal : {false, true}) {
    ModelConfig c = small_config("none");
    c.causal = causal;
    auto m = make_model(c, 13);
    NoGrad ng;
    const Array y = m->forward(tok, pos).value(), py = m->forward(ptok, pos).value();
    double worst = 0;
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t v = 0; v < 11; ++v) worst = std::max(worst, double(std::abs(py(0, t, v) - y(0, perm[t], v))));
    INFO("causal " << causal << " worst " << worst);
    if (causal) CHECK(worst > 1e-3);
    else CHECK(worst < 1e-5);
  }
}

TEST_CASE("learned: only the rows of positions used receive gradient, and beyond max_len is an error unless clamped", "[positional][learned]") {
  auto m = make_model(small_config("learned", {{"max_len", Value(std::int64_t(20))}}), 14);
  Rng rng(15);
  const IndexArray tok = random_tokens(2, 6, 11, rng);
  IndexArray pos = default_positions(2, 6, 2);  // rows 2..7 used
  Tensor logits = m->forward(tok, pos);
  Array seed(logits.shape());
  for (auto& v : seed) v = static_cast<real>(rng.normal());
  logits.backward(seed);
  const Tensor table = m->parameter("pos.weight");
  REQUIRE(table.shape() == Shape{20, 16});
  REQUIRE(table.has_grad());
  for (std::size_t r = 0; r < 20; ++r) {
    double n = 0;
    for (std::size_t j = 0; j < 16; ++j) n += std::abs(table.grad()(r, j));
    INFO("row " << r);
    if (r >= 2 && r <= 7) CHECK(n > 0);
    else CHECK(n == 0);
  }
  NoGrad ng;
  CHECK_THROWS_WITH(m->forward(tok, default_positions(2, 6, 16)), Catch::Contains("clamp") && Catch::Contains("21"));
  CHECK(m->encoding().unsupported(20).has_value());
  CHECK_FALSE(m->encoding().unsupported(19).has_value());
  auto clamped = make_model(small_config("learned", {{"max_len", Value(std::int64_t(20))}, {"clamp", Value(true)}}), 14);
  CHECK_NOTHROW(clamped->forward(tok, default_positions(2, 6, 16)));
  CHECK_FALSE(clamped->encoding().unsupported(1000).has_value());
  // max_len 0 means the longest training sequence (train_seq_len)
  auto dflt = make_model(small_config("learned"), 1);
  CHECK(dflt->parameter("pos.weight").size(0) == 16);
}

TEST_CASE("inconsistent model settings are caught when the model is built", "[positional][config]") {
  ModelConfig c = small_config("rope", {{"fraction", Value(0.3)}});
  CHECK_THROWS_WITH(Transformer(c), Catch::Contains("rope") && Catch::Contains("even"));
  ModelConfig c2 = small_config("none");
  c2.n_heads = 3;
  CHECK_THROWS_WITH(Transformer(c2), Catch::Contains("divisible"));
  ModelConfig c3 = small_config("rope", {{"fraction", Value(0.5)}});  // 4 of 8 dims: fine
  CHECK_NOTHROW(Transformer(c3));
}

TEST_CASE("alibi adds -slope * distance per head: one bias for shared ids, one per row otherwise", "[positional][alibi]") {
  auto m = make_model(small_config("alibi"), 21);
  const IndexArray pos = default_positions(1, 5);
  const Tensor b = m->encoding().attention_bias(Tensor(), Tensor(), {pos, 0, true});
  REQUIRE(b.shape() == Shape{1, 2, 5, 5});
  // H = 2: slopes 2^-4 and 2^-8
  CHECK(b.value()(0, 0, 4, 1) == Approx(-3.0 / 16));
  CHECK(b.value()(0, 1, 4, 1) == Approx(-3.0 / 256));
  CHECK(b.value()(0, 0, 2, 2) == 0);
  // rows with their own ids: a bias per row, from the ids (not the indices)
  IndexArray rows = default_positions(2, 5);
  const std::int32_t ids[5] = {0, 3, 4, 9, 20};
  for (std::size_t t = 0; t < 5; ++t) rows(1, t) = ids[t];
  const Tensor br = m->encoding().attention_bias(Tensor(), Tensor(), {rows, 1, false});
  REQUIRE(br.shape() == Shape{2, 2, 5, 5});
  CHECK(br.value()(0, 0, 4, 1) == Approx(-3.0 / 16));
  CHECK(br.value()(1, 0, 4, 1) == Approx(-17.0 / 16));
  CHECK(br.value()(1, 1, 3, 0) == Approx(-9.0 / 256));
}
