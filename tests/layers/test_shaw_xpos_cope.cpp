// Shaw's relative keys/values, xPos and CoPE beyond their PyTorch parity fixtures (test_parity.cpp) and
// the properties every encoding has (test_encoding_properties.cpp): the bucket index from position ids,
// zero or constant tables reducing Shaw to no encoding, xPos's scale against the formula and its limit
// RoPE, CoPE's counts with gates forced to 1, 1/2 and 0, and the load-time checks.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/tape.hpp"
#include "model_helpers.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

using Enc = std::map<std::string, Value>;

// Every parameter `dst` shares by name with `src` gets src's value (the encoding's own stay).
void copy_shared(const Transformer& src, Transformer& dst) {
  for (const auto& p : dst.parameters()) {
    if (p.name.rfind("pos.", 0) == 0) continue;
    Tensor t = p.tensor;
    t.mutable_value() = src.parameter(p.name).value();
  }
}

void fill(Tensor t, real v) { t.mutable_value().fill(v); }

double max_abs_diff(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a.data()[i] - b.data()[i])));
  return worst;
}

IndexArray ids(std::initializer_list<std::initializer_list<std::int32_t>> rows) {
  IndexArray p(Shape{rows.size(), rows.begin()->size()});
  std::size_t b = 0;
  for (const auto& r : rows) {
    std::size_t t = 0;
    for (std::int32_t v : r) p(b, t++) = v;
    ++b;
  }
  return p;
}

}  // namespace

TEST_CASE("shaw: bucket clip(p_j - p_i, -k, k) + k from the ids, one index per forward, tables per layer",
          "[positional][shaw]") {
  auto m = make_model(small_config("shaw", {{"clip", Value(std::int64_t(2))}}), 3);
  CHECK(m->parameter("pos.tables.0.key").shape() == Shape{5, 8});  // (2k + 1, hs)
  CHECK(m->parameter("pos.tables.1.value").shape() == Shape{5, 8});
  PositionalEncoding& e = m->encoding();
  const IndexArray rows = ids({{0, 1, 2, 3, 4}, {3, 5, 6, 9, 20}});
  e.begin_forward(rows);
  const RelativeKV r0 = e.relative_kv({rows, 0, false}), r1 = e.relative_kv({rows, 1, false});
  REQUIRE(r0.index);
  REQUIRE(r0.index->shape() == (std::vector<std::size_t>{2, 5, 5}));
  CHECK(r0.index == r1.index);  // one table per forward, shared by the layers
  CHECK(r0.key.impl() == m->parameter("pos.tables.0.key").impl());
  CHECK(r1.value.impl() == m->parameter("pos.tables.1.value").impl());
  const IndexArray& ix = *r0.index;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 5; ++j) {
        const int rel = rows(b, j) - rows(b, i);
        CHECK(ix(b, i, j) == std::min(std::max(rel, -2), 2) + 2);
      }
  CHECK(ix(1, 4, 3) == 0);  // 9 - 20 clipped to -2
  CHECK(ix(1, 1, 2) == 3);  // 6 - 5 = +1
  // shared ids: one (1, T, T) table
  const IndexArray same = ids({{4, 5, 6}, {4, 5, 6}});
  e.begin_forward(same);
  REQUIRE(e.relative_kv({same, 0, true}).index->shape() == (std::vector<std::size_t>{1, 3, 3}));
  // keys only: no value table
  auto keys = make_model(small_config("shaw", {{"values", Value(false)}}), 3);
  CHECK_THROWS(keys->parameter("pos.tables.0.value"));
  keys->encoding().begin_forward(same);
  CHECK_FALSE(keys->encoding().relative_kv({same, 1, true}).value.defined());
  CHECK(keys->encoding().relative_kv({same, 1, true}).key.defined());
}

TEST_CASE("shaw with zero tables, or a^K constant over buckets, computes what no encoding computes",
          "[positional][shaw]") {
  auto none = make_model(small_config("none"), 5);
  Rng rng(6);
  const IndexArray tok = random_tokens(2, 9, 11, rng), pos = ids({{0, 1, 2, 3, 4, 5, 6, 7, 8}, {2, 3, 5, 8, 9, 11, 12, 13, 15}});
  NoGrad ng;
  const Array want = none->forward(tok, pos).value();
  for (bool values : {false, true}) {
    INFO("values " << values);
    auto shaw = make_model(small_config("shaw", {{"values", Value(values)}, {"clip", Value(std::int64_t(3))}}), 5);
    copy_shared(*none, *shaw);
    for (const auto& p : shaw->parameters())
      if (p.name.rfind("pos.", 0) == 0) fill(p.tensor, 0);
    CHECK(max_abs_diff(shaw->forward(tok, pos).value(), want) < 1e-6);
    // a^K the same vector in every bucket adds q_i . w to a whole row of logits: the softmax ignores it
    for (std::size_t l = 0; l < 2; ++l) {
      Tensor key = shaw->parameter("pos.tables." + std::to_string(l) + ".key");
      for (std::size_t c = 0; c < 7; ++c)
        for (std::size_t d = 0; d < 8; ++d) key.mutable_value()(c, d) = real(0.3 * (double(d) - 3.5) + 0.1 * l);
    }
    CHECK(max_abs_diff(shaw->forward(tok, pos).value(), want) < 1e-5);
    // ... and a bucket-dependent a^K changes them (the test above can fail)
    Tensor key = shaw->parameter("pos.tables.0.key");
    key.mutable_value()(3, 0) += real(2);
    CHECK(max_abs_diff(shaw->forward(tok, pos).value(), want) > 1e-3);
  }
}

TEST_CASE("shaw: a clip beyond every length works, and clip must be at least 1 (checked at load)",
          "[positional][shaw]") {
  auto m = make_model(small_config("shaw", {{"clip", Value(std::int64_t(1000))}}), 7);
  CHECK(m->parameter("pos.tables.0.key").shape() == Shape{2001, 8});
  Rng rng(8);
  const IndexArray pos = ids({{0, 3, 4, 9, 15}});
  NoGrad ng;
  CHECK_NOTHROW(m->forward(random_tokens(1, 5, 11, rng), pos));
  const RelativeKV r = m->encoding().relative_kv({pos, 0, true});
  CHECK((*r.index)(0, 4, 1) == 1000 + 3 - 15);
  const ModelDims dims = small_config("shaw").dims();
  CHECK_THROWS_WITH(resolve_encoding_params("shaw", {{"clip", Value(std::int64_t(0))}}, dims),
                    Catch::Contains("clip") && Catch::Contains("[1, 100000]"));
  CHECK_THROWS_WITH(resolve_encoding_params("shaw", {{"values", Value(std::int64_t(1))}}, dims),
                    Catch::Contains("values"));
}

TEST_CASE("xpos: pair i of q at scale position s is rotated by p theta_i and scaled by zeta_i^(s/B), k by the inverse",
          "[positional][xpos]") {
  const double base = 100.0, B = 4.0, gamma = 0.5;
  auto m = make_model(small_config("xpos", {{"base", Value(base)}, {"scale_base", Value(B)}, {"gamma", Value(gamma)}}), 9);
  const std::size_t hs = 8, H = 2, T = 5;
  const IndexArray pos = ids({{0, 1, 2, 3, 4}, {7, 8, 10, 13, 14}});
  // q = k = (1, 0) in every pair: the output pair is scale * (cos a, sin a)
  Array ones(Shape{2, H, T, hs});
  for (std::size_t n = 0; n < ones.size(); ++n) ones.data()[n] = n % 2 == 0 ? real(1) : real(0);
  Tensor q(ones), k(ones);
  m->encoding().begin_forward(pos);
  m->encoding().encode_qk(q, k, {pos, 0, false});
  REQUIRE(q.shape() == Shape{2, H, T, hs});
  // torchscale: zeta = (arange(0, hs, 2) + gamma * hs) / ((1 + gamma) * hs); scale positions t - ceil(T/2)
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t i = 0; i < hs / 2; ++i) {
        const double zeta = (2.0 * i + gamma * hs) / ((1 + gamma) * hs);
        const double s = double(pos(b, t)) - double(pos(b, 0)) - 3.0;  // ceil(5 / 2) = 3
        const double a = double(pos(b, t)) * std::pow(base, -2.0 * i / hs);
        const double up = std::pow(zeta, s / B), down = std::pow(zeta, -s / B);
        INFO("row " << b << " t " << t << " pair " << i);
        CHECK(q.value()(b, 1, t, 2 * i) == Approx(up * std::cos(a)).margin(1e-6));
        CHECK(q.value()(b, 1, t, 2 * i + 1) == Approx(up * std::sin(a)).margin(1e-6));
        CHECK(k.value()(b, 0, t, 2 * i) == Approx(down * std::cos(a)).margin(1e-6));
        CHECK(k.value()(b, 0, t, 2 * i + 1) == Approx(down * std::sin(a)).margin(1e-6));
      }
  // gamma 0.4, hs 8: zeta_0 = 0.4 / 1.4, zeta_3 = (0.75 + 0.4) / 1.4
  auto d = make_model(small_config("xpos", {{"scale_base", Value(1.0)}}), 9);
  const IndexArray p2 = ids({{0, 1}});  // scale positions -1, 0
  Array one_row(Shape{1, H, 2, hs});
  std::copy(ones.data(), ones.data() + one_row.size(), one_row.data());
  Tensor q1(one_row), k1(one_row);
  d->encoding().begin_forward(p2);
  d->encoding().encode_qk(q1, k1, {p2, 0, true});
  CHECK(q1.value()(0, 0, 0, 0) == Approx(1.4 / 0.4));   // q: zeta_0^-1 at angle 0
  CHECK(k1.value()(0, 0, 0, 6) == Approx(1.15 / 1.4));  // k: zeta_3^(+1) at angle 0
}

TEST_CASE("xpos with an enormous scale_base is RoPE (interleaved), and a small one is not", "[positional][xpos]") {
  auto rope = make_model(small_config("rope"), 10);
  Rng rng(11);
  const IndexArray tok = random_tokens(2, 10, 11, rng), pos = ids({{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 4, 6, 7, 8, 9, 11, 12, 14, 15}});
  NoGrad ng;
  const Array want = rope->forward(tok, pos).value();
  auto flat = make_model(small_config("xpos", {{"scale_base", Value(1e9)}}), 10);
  copy_shared(*rope, *flat);
  CHECK(max_abs_diff(flat->forward(tok, pos).value(), want) < 1e-5);
  auto steep = make_model(small_config("xpos", {{"scale_base", Value(4.0)}}), 10);
  copy_shared(*rope, *steep);
  CHECK(max_abs_diff(steep->forward(tok, pos).value(), want) > 1e-3);
}

TEST_CASE("xpos reports ids whose scales leave float's range as unsupported", "[positional][xpos]") {
  // |log zeta_0| = log(1.4 / 0.4) = 1.2528; limit e^60: ids up to 60 / 1.2528 * scale_base
  auto m = make_model(small_config("xpos"), 1);
  CHECK_FALSE(m->encoding().unsupported(24000));
  CHECK_THAT(m->encoding().unsupported(25000).value_or(""), Catch::Contains("scale_base"));
  auto steep = make_model(small_config("xpos", {{"scale_base", Value(8.0)}}), 1);
  CHECK_FALSE(steep->encoding().unsupported(380));
  CHECK(steep->encoding().unsupported(390));
}

TEST_CASE("xpos needs an even head size and gamma > 0 (checked at load)", "[positional][xpos]") {
  ModelDims dims = small_config("xpos").dims();
  CHECK_THROWS_WITH(resolve_encoding_params("xpos", {{"gamma", Value(0.0)}}, dims), Catch::Contains("gamma"));
  CHECK_THROWS_WITH(resolve_encoding_params("xpos", {{"scale_base", Value(0.5)}}, dims), Catch::Contains("scale_base"));
  dims.head_dim = 7;
  CHECK_THROWS_WITH(resolve_encoding_params("xpos", {}, dims), Catch::Contains("xpos") && Catch::Contains("even"));
}

TEST_CASE("cope counts: gates forced to 1 give p_ij = i - j + 1 (clamped to npos - 1), 1/2 half that, 0 nothing",
          "[positional][cope]") {
  const std::size_t npos = 5, hs = 8, H = 2, T = 7;
  auto m = make_model(small_config("cope", {{"npos", Value(std::int64_t(npos))}}), 12);
  Tensor e = m->parameter("pos.tables.1.weight");
  REQUIRE(e.shape() == Shape{npos, hs});
  for (std::size_t c = 0; c < npos; ++c)
    for (std::size_t d = 0; d < hs; ++d) e.mutable_value()(c, d) = real(double(c) / hs);  // u . e[c] = c
  Array u(Shape{1, H, T, hs});
  u.fill(real(1));
  auto scaled = [&](double s, bool flip_half) {
    Array a = u;
    for (std::size_t n = 0; n < a.size(); ++n) a.data()[n] = real(s * (flip_half && n % hs >= hs / 2 ? -1 : 1));
    return Tensor(a);
  };
  const IndexArray pos = default_positions(1, T);
  struct Case { const char* what; Tensor k; double gate; };
  const Case cases[] = {{"gates 1", scaled(20, false), 1.0}, {"gates 1/2", scaled(1, true), 0.5}, {"gates 0", scaled(-20, false), 0.0}};
  for (const Case& c : cases) {
    INFO(c.what);
    const Tensor bias = m->encoding().attention_bias(Tensor(u), c.k, {pos, 1, true});
    REQUIRE(bias.shape() == Shape{1, H, T, T});
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j <= i; ++j) {
          const double count = std::min(c.gate * double(i - j + 1), double(npos - 1));
          CHECK(bias.value()(0, h, i, j) == Approx(count / std::sqrt(double(hs))).margin(1e-6));
        }
  }
}

TEST_CASE("cope: starts as no encoding (zero embeddings, as the authors), ignores every id, "
          "and with embeddings it is not NoPE", "[positional][cope]") {
  auto none = make_model(small_config("none"), 13);
  auto cope = make_model(small_config("cope"), 13);
  copy_shared(*none, *cope);
  CHECK(cope->parameter("pos.tables.0.weight").shape() == Shape{17, 8});  // npos 0: train_seq_len 16 + 1
  Rng rng(14);
  const IndexArray tok = random_tokens(2, 8, 11, rng), pos = default_positions(2, 8);
  NoGrad ng;
  const Array base = none->forward(tok, pos).value();
  CHECK(max_abs_diff(cope->forward(tok, pos).value(), base) == 0);
  for (const auto& p : cope->parameters())
    if (p.name.rfind("pos.", 0) == 0)
      for (auto& x : Tensor(p.tensor).mutable_value()) x = static_cast<real>(0.5 * rng.normal());
  const Array with = cope->forward(tok, pos).value();
  CHECK(max_abs_diff(with, base) > 1e-3);
  // any other ids, not just a shift: the counts come from the content alone
  const IndexArray other = ids({{5, 9, 10, 40, 41, 42, 100, 101}, {0, 2, 4, 6, 8, 10, 12, 14}});
  CHECK(max_abs_diff(cope->forward(tok, other).value(), with) == 0);
}

TEST_CASE("cope needs causal attention and npos != 1 (checked at load, naming the key)", "[positional][cope]") {
  ModelDims dims = small_config("cope").dims();
  CHECK_NOTHROW(resolve_encoding_params("cope", {{"npos", Value(std::int64_t(2))}}, dims));
  CHECK_THROWS_WITH(resolve_encoding_params("cope", {{"npos", Value(std::int64_t(1))}}, dims), Catch::Contains("npos"));
  CHECK_THROWS_WITH(resolve_encoding_params("cope", {{"npos", Value(std::int64_t(-3))}}, dims), Catch::Contains("npos"));
  dims.causal = false;
  CHECK_THROWS_WITH(resolve_encoding_params("cope", {}, dims), Catch::Contains("model.causal"));
  ModelConfig c = small_config("cope");
  c.causal = false;
  CHECK_THROWS_WITH(Transformer(c), Catch::Contains("cope") && Catch::Contains("causal"));
}
