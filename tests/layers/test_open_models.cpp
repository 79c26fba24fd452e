// What open models ship (issue 46), in the model: encoding variants (one encoding with two parameter
// sets, Gemma 3's two RoPE bases), chunked local attention (Llama 4), Llama 4's attention temperature
// tuning, each against its PyTorch twin at 1x, 2x and 4x the training length (tests/pytorch/gen_fixtures.py;
// the gradients are checked by test_parity.cpp with every fixture), and their properties and errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/tape.hpp"
#include "model_helpers.hpp"
#include "parity_fixture.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

Array logits_of(Transformer& m, const IndexArray& tokens) {
  NoGrad ng;
  return m.forward(tokens, default_positions(tokens.shape()[0], tokens.shape()[1])).value();
}

bool same(const Array& a, const Array& b) { return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin()); }

}  // namespace

TEST_CASE("open-model fixtures: logits of the PyTorch twin at 1x, 2x and 4x the training length", "[parity][open_models]") {
  std::size_t lengths = 0;
  for (const char* name : {"model_variant_rope_bases", "model_variant_t5", "model_rope_chunk", "model_stick_breaking_chunk",
                           "model_none_temperature_tuning", "model_llama4_irope"})
    lengths += check_long_logits(name);
  CHECK(lengths == 18);
}

TEST_CASE("an encoding variant is its encoding with its own parameters, built as pos_<name>", "[layout][variant]") {
  Rng rng(1);
  const IndexArray tok = random_tokens(2, 12, 11, rng);
  ModelConfig plain = small_config("rope");
  plain.layer_encodings = "rope,rope";
  ModelConfig same_params = plain;
  same_params.layer_encodings = "rope,rope.global";  // no parameters of its own: rope's defaults, as rope's
  auto a = make_model(plain), b = make_model(same_params);
  CHECK(same(logits_of(*a, tok), logits_of(*b, tok)));
  CHECK(&b->layer_encoding(1) != &b->encoding());
  ModelConfig two_bases = same_params;
  two_bases.layer_encoding_params["rope.global"]["base"] = Value(3.0);
  auto c = make_model(two_bases);
  CHECK_FALSE(same(logits_of(*a, tok), logits_of(*c, tok)));
  // A variant with parameters: its own tensors, named pos_<encoding>.<variant>.
  ModelConfig t5 = small_config("t5");
  t5.layer_encodings = "t5,t5.far";
  t5.layer_encoding_params["t5.far"]["num_buckets"] = Value(std::int64_t(8));
  auto m = make_model(t5);
  std::size_t own = 0, far = 0;
  for (const auto& p : m->parameters()) {
    own += p.name.rfind("pos.", 0) == 0;
    far += p.name.rfind("pos_t5.far.", 0) == 0;
  }
  CHECK(own > 0);
  CHECK(far > 0);
  ModelConfig bad = small_config("rope");
  bad.layer_encodings = "rope,rope.";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("encoding variant 'rope.'"));
  bad.layer_encodings = "rope,rope.global";
  bad.layer_encoding_params["rope.global"]["base"] = Value(-1.0);
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("rope.global"));
}

TEST_CASE("a chunk of C: one layer's output at i depends on the tokens of i's chunk only", "[layout][chunk]") {
  ModelConfig c = small_config("none");
  c.n_layers = 1;
  c.attention.chunk = "4";
  auto m = make_model(c);
  Rng rng(2);
  const std::size_t T = 12;
  const IndexArray tok = random_tokens(1, T, 11, rng);
  const Array base = logits_of(*m, tok);
  for (std::size_t s = 0; s < T; ++s) {  // change token s: outputs change exactly in [s, end of s's chunk)
    IndexArray t2 = tok;
    t2(0, s) = (t2(0, s) + 1) % 11;
    const Array out = logits_of(*m, t2);
    for (std::size_t i = 0; i < T; ++i) {
      bool changed = false;
      for (std::size_t v = 0; v < 11; ++v) changed = changed || out(0, i, v) != base(0, i, v);
      INFO("token " << s << " changed, output " << i);
      CHECK(changed == (i >= s && i / 4 == s / 4));
    }
  }
}

TEST_CASE("a chunk as long as the sequence or longer is plain causal attention, bit for bit", "[layout][chunk]") {
  Rng rng(3);
  const IndexArray tok = random_tokens(2, 10, 11, rng);
  ModelConfig c = small_config("rope");
  auto full = make_model(c);
  const Array want = logits_of(*full, tok);
  for (const char* chunk : {"10", "11", "1000"}) {
    c.attention.chunk = chunk;
    auto m = make_model(c);
    INFO("chunk " << chunk);
    CHECK(same(logits_of(*m, tok), want));
  }
  c.attention.chunk = "9";
  CHECK_FALSE(same(logits_of(*make_model(c), tok), want));
  c.attention.chunk = "0";
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("attention.chunk") && Catch::Contains("a chunk of 0"));
  c.attention.chunk = "4";
  c.causal = false;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("attention.chunk") && Catch::Contains("causal"));
}

TEST_CASE("temperature tuning: Meta's multipliers, at evaluation only unless in training", "[layout][tuning]") {
  // log(floor((t + 1) / F) + 1) a + 1 (meta-llama/llama-models models/llama4/model.py)
  CHECK(tuning_scale(0, 8192, 0.1) == 1.0);
  CHECK(tuning_scale(8190, 8192, 0.1) == 1.0);
  CHECK(tuning_scale(8191, 8192, 0.1) == Approx(1 + 0.1 * std::log(2.0)));
  CHECK(tuning_scale(3 * 8192 - 1, 8192, 0.1) == Approx(1 + 0.1 * std::log(4.0)));
  AttentionScalingSettings s;
  s.tuning_floor_scale = 4;
  CHECK(tuning_row_scales(s, 3) == nullptr);  // every row's multiplier is 1
  const auto rows = tuning_row_scales(s, 9);
  REQUIRE(rows);
  CHECK((*rows)[2] == 1);
  CHECK((*rows)[3] == Approx(1 + 0.1 * std::log(2.0)));
  CHECK((*rows)[8] == Approx(1 + 0.1 * std::log(3.0)));

  Rng rng(4);
  const IndexArray tok = random_tokens(2, 12, 11, rng);
  ModelConfig c = small_config("none");
  auto plain = make_model(c);
  c.attention.temperature_tuning = "0,1";
  c.attention.tuning_floor_scale = 3;
  c.attention.tuning_attn_scale = 0.5;
  auto tuned = make_model(c);
  const Array train_mode = logits_of(*tuned, tok);  // training mode: not applied
  CHECK(same(train_mode, logits_of(*plain, tok)));
  tuned->set_training(false), plain->set_training(false);
  const Array eval_mode = logits_of(*tuned, tok);
  CHECK_FALSE(same(eval_mode, logits_of(*plain, tok)));
  // Rows t + 1 < F (t = 0, 1) are unchanged; the later ones are not.
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t v = 0; v < 11; ++v) CHECK(eval_mode(0, t, v) == train_mode(0, t, v));
  c.attention.tuning_in_training = true;
  auto always = make_model(c);
  CHECK(same(logits_of(*always, tok), eval_mode));
  c.attention.temperature_tuning = "2";
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("attention.temperature_tuning") && Catch::Contains("0 or 1"));
}
