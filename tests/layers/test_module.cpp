// Module: parameter names (the checkpoint keys), counts, init rules, training mode.
#include <catch2/catch.hpp>
#include <cmath>

#include "model_helpers.hpp"

using namespace pelab;
using namespace pelab::test;

TEST_CASE("the model's parameter names and shapes follow the documented scheme", "[module]") {
  ModelConfig c = small_config("learned");
  Transformer m(c);
  std::map<std::string, Shape> want = {
      {"tok_emb.weight", {11, 16}}, {"pos.weight", {16, 16}},
      {"blocks.0.ln1.weight", {16}}, {"blocks.0.ln1.bias", {16}},
      {"blocks.0.attn.qkv.weight", {48, 16}}, {"blocks.0.attn.qkv.bias", {48}},
      {"blocks.0.attn.proj.weight", {16, 16}}, {"blocks.0.attn.proj.bias", {16}},
      {"blocks.0.ln2.weight", {16}}, {"blocks.0.ln2.bias", {16}},
      {"blocks.0.mlp.fc.weight", {64, 16}}, {"blocks.0.mlp.fc.bias", {64}},
      {"blocks.0.mlp.proj.weight", {16, 64}}, {"blocks.0.mlp.proj.bias", {16}},
      {"ln_f.weight", {16}}, {"ln_f.bias", {16}}, {"head.weight", {11, 16}}};
  const auto params = m.parameters();
  std::map<std::string, Shape> got;
  for (const auto& p : params) got[p.name] = p.tensor.shape();
  for (const auto& [name, shape] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    CHECK(got[name] == shape);
  }
  CHECK(got.count("blocks.1.mlp.proj.bias") == 1);
  CHECK(params.size() == 2 + 12 * 2 + 2 + 1);
  std::size_t n = 0;
  for (const auto& p : params) n += p.tensor.numel();
  CHECK(m.num_parameters() == n);
  CHECK_THROWS_WITH(m.parameter("blocks.0.attn.qkv.weigth"), Catch::Contains("did you mean 'blocks.0.attn.qkv.weight'"));
}

TEST_CASE("tied embeddings drop the head and share tok_emb", "[module]") {
  ModelConfig c = small_config("none");
  c.tie_embeddings = true;
  Transformer m(c);
  for (const auto& p : m.parameters()) CHECK(p.name != "head.weight");
}

TEST_CASE("init: weights ~ N(0, std), biases zero, LayerNorm gains one", "[module][init]") {
  ModelConfig c = small_config("none");
  c.d_model = 64;
  c.n_heads = 4;
  Transformer m(c);
  Rng rng(1);
  init_parameters(m, rng, 0.02);
  const Tensor w = m.parameter("blocks.0.mlp.fc.weight");
  double s = 0, s2 = 0;
  for (std::size_t i = 0; i < w.numel(); ++i) s += w.data()[i], s2 += double(w.data()[i]) * w.data()[i];
  const double mean = s / w.numel(), sd = std::sqrt(s2 / w.numel() - mean * mean);
  CHECK(std::abs(mean) < 0.002);
  CHECK(sd == Approx(0.02).epsilon(0.05));
  for (const auto& p : m.parameters())
    for (std::size_t i = 0; i < p.tensor.numel(); ++i) {
      if (p.kind == ParamKind::bias || p.kind == ParamKind::norm_bias) REQUIRE(p.tensor.data()[i] == 0);
      if (p.kind == ParamKind::norm_gain) REQUIRE(p.tensor.data()[i] == 1);
    }
  // same seed, same weights
  Transformer m2(c);
  Rng rng2(1);
  init_parameters(m2, rng2, 0.02);
  CHECK(m2.parameter("head.weight").value() == m.parameter("head.weight").value());
}

TEST_CASE("dropout is active only in training mode and needs an rng", "[module][dropout]") {
  ModelConfig c = small_config("sinusoidal");
  c.dropout = 0.5;
  auto m = make_model(c);
  Rng rng(2);
  const IndexArray tok = random_tokens(1, 5, 11, rng), pos = default_positions(1, 5);
  CHECK_THROWS_WITH(m->forward(tok, pos), Catch::Contains("dropout_rng"));
  ForwardOptions o;
  Rng d1(3), d2(3);
  o.dropout_rng = &d1;
  const Array a = m->forward(tok, pos, o).value();
  o.dropout_rng = &d2;
  CHECK(m->forward(tok, pos, o).value() == a);  // same rng seed: same masks
  m->set_training(false);
  const Array e1 = m->forward(tok, pos).value(), e2 = m->forward(tok, pos).value();
  CHECK(e1 == e2);
  CHECK(e1 != a);
}
