// The history encodings (integer, normalized, binary, multiplicative, concat, recurrent): their values
// against the formulas, and the flaw or property each one exists to show, each as a test that fails
// when it breaks. The generic properties (causality, relative/absolute, rows) are in
// test_encoding_properties.cpp; PyTorch parity in test_parity.cpp.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/ops/recurrent.hpp"
#include "core/tape.hpp"
#include "layers/positional/sinusoidal.hpp"
#include "model_helpers.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

std::unique_ptr<PositionalEncoding> encoding(const std::string& name, std::map<std::string, Value> given = {},
                                             ModelDims dims = small_config("none").dims()) {
  return make_encoding(name, resolve_encoding_params(name, given, dims), dims);
}

IndexArray rows(const std::vector<std::vector<std::int32_t>>& ids) {
  IndexArray p(Shape{ids.size(), ids[0].size()});
  for (std::size_t b = 0; b < ids.size(); ++b)
    for (std::size_t t = 0; t < ids[b].size(); ++t) p(b, t) = ids[b][t];
  return p;
}

// encode_input of zero embeddings: the position part alone, (B, T, C).
Array position_part(PositionalEncoding& e, const IndexArray& ids, std::size_t C) {
  NoGrad ng;
  return e.encode_input(Tensor::zeros({ids.shape()[0], ids.shape()[1], C}), ids).value();
}

double max_abs_diff(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a.data()[i] - b.data()[i])));
  return worst;
}

Array logits(Transformer& m, const IndexArray& tok, const IndexArray& pos) {
  NoGrad ng;
  return m.forward(tok, pos).value();
}

}  // namespace

TEST_CASE("integer adds scale * id with alternating signs, the constant form is erased by pre-LN",
          "[positional][history][integer]") {
  auto e = encoding("integer", {{"scale", Value(0.5)}});
  const Array pe = position_part(*e, rows({{0, 3, 10}}), 4);
  REQUIRE(pe.shape() == Shape{1, 3, 4});
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t k = 0; k < 4; ++k) CHECK(pe(0, t, k) == real(0.5 * std::vector<int>{0, 3, 10}[t] * (k % 2 ? -1 : 1)));
  const Array flat = position_part(*encoding("integer", {{"pattern", Value(std::string("constant"))}}), rows({{7}}), 3);
  for (std::size_t k = 0; k < 3; ++k) CHECK(flat(0, 0, k) == 7);

  // LayerNorm subtracts each vector's mean: t on every component never reaches a block. Same weights as
  // NoPE (neither has parameters of its own), so the logits are NoPE's up to the rounding of x + t.
  Rng rng(1);
  const IndexArray tok = random_tokens(2, 12, 11, rng), pos = default_positions(2, 12);
  auto nope = make_model(small_config("none"), 3);
  auto constant = make_model(small_config("integer", {{"pattern", Value(std::string("constant"))}}), 3);
  auto alternating = make_model(small_config("integer"), 3);
  const Array base = logits(*nope, tok, pos);
  CHECK(max_abs_diff(logits(*constant, tok, pos), base) < 1e-4);
  CHECK(max_abs_diff(logits(*alternating, tok, pos), base) > 1e-2);
}

TEST_CASE("integer positions grow without bound: the token part of the normalized input shrinks like 1/t",
          "[positional][history][integer]") {
  // LayerNorm(x + t u) = u / |u|_rms + O(1/t): two different tokens at position t look alike once t is large.
  auto e = encoding("integer");
  Rng rng(2);
  Array x(Shape{1, 2, 16});
  for (auto& v : x) v = static_cast<real>(rng.normal());
  auto normalized_gap = [&](std::int32_t t) {
    NoGrad ng;
    const Array y = e->encode_input(Tensor(x), rows({{t, t}})).value();
    std::vector<double> a(16), b(16);
    for (std::size_t r = 0; r < 2; ++r) {
      std::vector<double>& v = r ? b : a;
      double mu = 0, var = 0;
      for (std::size_t k = 0; k < 16; ++k) mu += y(0, r, k) / 16.0;
      for (std::size_t k = 0; k < 16; ++k) var += (y(0, r, k) - mu) * (y(0, r, k) - mu) / 16.0;
      for (std::size_t k = 0; k < 16; ++k) v[k] = (y(0, r, k) - mu) / std::sqrt(var);
    }
    double d = 0;
    for (std::size_t k = 0; k < 16; ++k) d += (a[k] - b[k]) * (a[k] - b[k]);
    return std::sqrt(d);
  };
  const double g1 = normalized_gap(1), g10 = normalized_gap(10), g100 = normalized_gap(100);
  CHECK(g10 < g1);
  CHECK(g100 < g10 / 5);
  CHECK(g100 * 100 == Approx(g10 * 10).epsilon(0.1));  // ~1/t
}

TEST_CASE("normalized is t / (T - 1), per row (p - min) / (max - min), and 0 for one position",
          "[positional][history][normalized]") {
  auto e = encoding("normalized");
  const Array a = position_part(*e, rows({{0, 1, 2, 3, 4}, {5, 7, 8, 9, 13}}), 2);
  const std::vector<std::vector<double>> want = {{0, 0.25, 0.5, 0.75, 1}, {0, 0.25, 0.375, 0.5, 1}};
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 5; ++t) {
      CHECK(a(b, t, 0) == Approx(want[b][t]).margin(1e-7));
      CHECK(a(b, t, 1) == Approx(-want[b][t]).margin(1e-7));
    }
  const Array one = position_part(*e, rows({{6}}), 2);
  CHECK(one(0, 0, 0) == 0);
  CHECK(one(0, 0, 1) == 0);
}

TEST_CASE("normalized: a prefix is encoded differently once the sequence grows (the step depends on the length)",
          "[positional][history][normalized]") {
  // Causal attention keeps outputs at t from later TOKENS (the generic causality test), but under
  // normalized every position's vector depends on the row's last id: the first 6 outputs of a
  // 12-token sequence are not those of its 6-token prefix. Sinusoidal is the control.
  Rng rng(3);
  const IndexArray tok = random_tokens(1, 12, 11, rng);
  IndexArray prefix(Shape{1, 6});
  std::copy(tok.data(), tok.data() + 6, prefix.data());
  for (const std::string name : {"normalized", "sinusoidal"}) {
    INFO(name);
    auto m = make_model(small_config(name), 4);
    const Array full = logits(*m, tok, default_positions(1, 12)), part = logits(*m, prefix, default_positions(1, 6));
    Array head(Shape{1, 6, 11});
    std::copy(full.data(), full.data() + 66, head.data());
    const double d = max_abs_diff(head, part);
    if (name == "normalized") CHECK(d > 1e-2);
    else CHECK(d < 1e-5);
  }
}

TEST_CASE("binary writes the id's bits as +-1 in the first components, with just enough bits by default",
          "[positional][history][binary]") {
  ModelDims dims = small_config("binary").dims();
  dims.max_position = 12;  // ids 0..11: 4 bits
  auto e = encoding("binary", {}, dims);
  const Array a = position_part(*e, rows({{0, 5, 15}}), 6);
  const std::vector<std::vector<real>> want = {{-1, -1, -1, -1, 0, 0}, {1, -1, 1, -1, 0, 0}, {1, 1, 1, 1, 0, 0}};
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t k = 0; k < 6; ++k) CHECK(a(0, t, k) == want[t][k]);
  CHECK_FALSE(e->unsupported(15));
  REQUIRE(e->unsupported(16));
  CHECK_THAT(*e->unsupported(16), Catch::Contains("4 bits") && Catch::Contains("encoding.binary.bits"));
  CHECK_THROWS_WITH(position_part(*e, rows({{3, 16}}), 6), Catch::Contains("does not fit in 4 bits"));
  for (const auto& [max_position, bits] : std::vector<std::pair<std::size_t, std::int64_t>>{{1, 1}, {16, 4}, {17, 5}, {130, 8}}) {
    dims.max_position = max_position;
    auto b = encoding("binary", {}, dims);
    INFO("max_position " << max_position);
    CHECK_FALSE(b->unsupported((std::int64_t(1) << bits) - 1));
    CHECK(b->unsupported(std::int64_t(1) << bits));
  }
  dims.d_model = 6;
  CHECK_THROWS_WITH(encoding("binary", {{"bits", Value(std::int64_t(7))}}, dims), Catch::Contains("exceed d_model 6"));
}

TEST_CASE("multiplicative: x times the sinusoidal table, learned gains start at 1 and are not decayed",
          "[positional][history][multiplicative]") {
  Rng rng(5);
  Array x(Shape{1, 3, 8});
  for (auto& v : x) v = static_cast<real>(rng.normal());
  const IndexArray ids = rows({{0, 4, 9}});
  NoGrad ng;
  const Array y = encoding("multiplicative")->encode_input(Tensor(x), ids).value();
  const Array pe = sinusoidal_table(ids, 8, 10000.0);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y.data()[i] == x.data()[i] * pe.data()[i]);
  CHECK(y(0, 0, 0) == 0);  // sin(0) = 0: the first token loses its even components

  auto m = make_model(small_config("multiplicative", {{"kind", Value(std::string("learned"))}}), 6);
  const auto params = m->parameters();
  const auto gain = std::find_if(params.begin(), params.end(), [](const Parameter& p) { return p.name == "pos.gain"; });
  REQUIRE(gain != params.end());
  CHECK(gain->kind == ParamKind::norm_gain);
  CHECK(gain->tensor.shape() == Shape{16, 16});
  for (real v : gain->tensor.value()) CHECK(v == 1);
  CHECK(m->encoding().unsupported(16));
  CHECK_FALSE(m->encoding().unsupported(15));
}

TEST_CASE("concat: a d_model - d_pos token table, the position vector in the last d_pos components",
          "[positional][history][concat]") {
  auto m = make_model(small_config("concat"), 7);  // d_model 16: d_pos 4
  CHECK(m->parameter("tok_emb.weight").shape() == Shape{11, 12});
  Rng rng(7);
  const IndexArray tok = random_tokens(2, 5, 11, rng), pos = default_positions(2, 5);
  CHECK(logits(*m, tok, pos).shape() == Shape{2, 5, 11});

  Array x(Shape{1, 2, 12});
  for (auto& v : x) v = static_cast<real>(rng.normal());
  const IndexArray ids = rows({{0, 5}});
  NoGrad ng;
  const Array y = m->encoding().encode_input(Tensor(x), ids).value();
  REQUIRE(y.shape() == Shape{1, 2, 16});
  const Array pe = sinusoidal_table(ids, 4, 10000.0);
  for (std::size_t t = 0; t < 2; ++t) {
    for (std::size_t k = 0; k < 12; ++k) CHECK(y(0, t, k) == x(0, t, k));
    for (std::size_t k = 0; k < 4; ++k) CHECK(y(0, t, 12 + k) == pe(0, t, k));
  }

  auto learned = make_model(small_config("concat", {{"kind", Value(std::string("learned"))}, {"d_pos", Value(std::int64_t(5))}}), 8);
  CHECK(learned->parameter("tok_emb.weight").shape() == Shape{11, 11});
  CHECK(learned->parameter("pos.weight").shape() == Shape{16, 5});
}

TEST_CASE("concat refuses tied embeddings and widths that leave no token components", "[positional][history][concat]") {
  ModelConfig c = small_config("concat");
  c.tie_embeddings = true;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("model.tie_embeddings") && Catch::Contains("12 of the 16"));
  CHECK_THROWS_WITH(Transformer(c), Catch::Contains("tie_embeddings"));
  c.tie_embeddings = false;
  c.encoding_params = {{"d_pos", Value(std::int64_t(16))}};
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("d_pos 16 leaves no token components"));
  c.encoding_params = {{"d_pos", Value(std::int64_t(5))}};
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("even d_pos"));
  c.encoding_params = {{"d_pos", Value(std::int64_t(5))}, {"kind", Value(std::string("learned"))}};
  CHECK_NOTHROW(c.validate());
  // Other encodings keep d_model-wide token tables and may tie them.
  ModelConfig s = small_config("sinusoidal");
  s.tie_embeddings = true;
  CHECK(Transformer(s).parameter("tok_emb.weight").shape() == Shape{11, 16});
}

TEST_CASE("recurrent: the embeddings go through torch.nn.GRU / nn.LSTM's recurrence, ids are ignored",
          "[positional][history][recurrent]") {
  for (const std::string cell : {"gru", "lstm"})
    for (bool residual : {false, true}) {
      INFO(cell << (residual ? ", residual" : ""));
      auto m = make_model(small_config("recurrent", {{"cell", Value(cell)}, {"residual", Value(residual)}}), 9);
      const std::size_t G = cell == "gru" ? 48 : 64;
      const Tensor w_ih = m->parameter("pos.rnn.weight_ih_l0"), w_hh = m->parameter("pos.rnn.weight_hh_l0");
      const Tensor b_ih = m->parameter("pos.rnn.bias_ih_l0"), b_hh = m->parameter("pos.rnn.bias_hh_l0");
      CHECK(w_ih.shape() == Shape{G, 16});
      CHECK(w_hh.shape() == Shape{G, 16});
      CHECK(b_hh.shape() == Shape{G});
      for (real v : w_hh.value()) CHECK(std::abs(v) <= real(0.25));  // U(-1/sqrt(16), 1/sqrt(16)), as PyTorch
      Rng rng(10);
      Array x(Shape{2, 5, 16});
      for (auto& v : x) v = static_cast<real>(rng.normal());
      NoGrad ng;
      const Array y = m->encoding().encode_input(Tensor(x), rows({{0, 1, 2, 3, 4}, {9, 3, 100, 7, 1}})).value();
      Array h = (cell == "gru" ? gru(Tensor(x), Tensor(), w_ih, w_hh, b_ih, b_hh)
                               : lstm(Tensor(x), Tensor(), Tensor(), w_ih, w_hh, b_ih, b_hh)).value();
      if (residual) h += x;
      CHECK(max_abs_diff(y, h) == 0);
    }
}

TEST_CASE("recurrent is not permutation-equivariant even without a causal mask, NoPE is", "[positional][history][recurrent]") {
  // Bidirectional attention with no positions treats the input as a set: permuting the tokens permutes
  // the outputs. A recurrence in front reads the tokens in order and breaks that.
  Rng rng(11);
  const IndexArray tok = random_tokens(1, 8, 11, rng), pos = default_positions(1, 8);
  const std::vector<std::size_t> perm = {3, 0, 7, 1, 6, 2, 5, 4};
  IndexArray shuffled(Shape{1, 8});
  for (std::size_t t = 0; t < 8; ++t) shuffled(0, t) = tok(0, perm[t]);
  for (const std::string name : {"none", "recurrent"}) {
    INFO(name);
    ModelConfig c = small_config(name);
    c.causal = false;
    auto m = make_model(c, 12);
    const Array a = logits(*m, tok, pos), b = logits(*m, shuffled, pos);
    double worst = 0;
    for (std::size_t t = 0; t < 8; ++t)
      for (std::size_t v = 0; v < 11; ++v) worst = std::max(worst, double(std::abs(b(0, t, v) - a(0, perm[t], v))));
    if (name == "none") CHECK(worst < 1e-5);
    else CHECK(worst > 1e-2);
  }
}
