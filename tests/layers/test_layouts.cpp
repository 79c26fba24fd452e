// Layouts and windows (layers/transformer.hpp): per-layer encodings, the heads an encoding acts in, sliding
// windows; their errors; and the input-level flag every encoding declares.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "core/tape.hpp"
#include "layers/dry_run.hpp"
#include "model_helpers.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

// Logits of `m` for tokens (1, T) at contiguous positions.
Array logits_of(Transformer& m, const IndexArray& tokens) {
  NoGrad ng;
  return m.forward(tokens, default_positions(1, tokens.shape()[1])).value();
}

}  // namespace

TEST_CASE("input-level encodings are refused in a layout, attention-level ones accepted", "[layout]") {
  // The ones that act on the embeddings alone (their attention hooks do nothing).
  const std::vector<std::string> input = {"abacus", "binary", "concat", "integer", "learned", "multiplicative",
                                          "normalized", "recurrent", "sinusoidal"};
  for (const std::string& name : EncodingRegistry::instance().names()) {
    INFO(name);
    const bool is_input = std::find(input.begin(), input.end(), name) != input.end();
    CHECK(EncodingRegistry::instance().get(name).input_level == is_input);
    ModelConfig c = small_config("none");
    c.layer_encodings = "none," + name;
    if (is_input)
      CHECK_THROWS_WITH(c.validate(), Catch::Contains("encoding.layers") && Catch::Contains("token embeddings"));
    else
      CHECK_NOTHROW(c.layer_encoding_names());
  }
}

TEST_CASE("a layout builds one encoding per name, named pos_<name>, each in its layers", "[layout]") {
  ModelConfig c = small_config("none");
  c.layer_encodings = "t5,none";  // small_config has 2 layers
  auto m = make_model(c);
  CHECK(&m->layer_encoding(0) != &m->encoding());
  CHECK(&m->layer_encoding(1) == &m->encoding());
  bool t5_params = false;
  for (const auto& p : m->parameters()) t5_params = t5_params || p.name.rfind("pos_t5.", 0) == 0;
  CHECK(t5_params);
  ModelConfig bad = small_config("none");
  bad.layer_encodings = "none,rope,alibi";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("3 entries for 2 layers"));
  bad.layer_encodings = "none,ropee";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("did you mean 'rope'"));
}

TEST_CASE("a sliding window of w keys: one layer's output at i ignores the tokens before i - w + 1", "[layout]") {
  ModelConfig c = small_config("none");
  c.n_layers = 1;
  c.attention.window = "3";
  auto m = make_model(c);
  Rng rng(5);
  IndexArray a = random_tokens(1, 8, c.vocab, rng), b = a;
  b(0, 0) = (a(0, 0) + 1) % std::int32_t(c.vocab);  // change the first token only
  const Array la = logits_of(*m, a), lb = logits_of(*m, b);
  const std::size_t V = c.vocab;
  for (std::size_t i = 0; i < 8; ++i) {
    bool same = true;
    for (std::size_t v = 0; v < V; ++v) same = same && la(0, i, v) == lb(0, i, v);
    INFO("position " << i);
    CHECK(same == (i >= 3));  // positions 0..2 see token 0, 3.. do not
  }
  ModelConfig bad = small_config("none");
  bad.attention.window = "2,x";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("attention.window") && Catch::Contains("'x'"));
  bad.attention.window = "4";
  bad.causal = false;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("needs causal attention"));
}

TEST_CASE("encoding.heads keeps the encoding to the first heads and refuses what it cannot split", "[layout]") {
  ModelConfig c = small_config("alibi");
  c.encoding_heads = c.n_heads + 1;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("encoding.heads") && Catch::Contains("exceeds"));
  for (const std::string name : {"shaw", "stick_breaking"}) {
    ModelConfig s = small_config(name);
    s.encoding_heads = 1;
    CHECK_THROWS_WITH(s.validate(), Catch::Contains("encoding.heads") && Catch::Contains(name));
  }
  // With every head, heads = n_heads is the same model as heads = 0.
  ModelConfig all = small_config("alibi"), zero = small_config("alibi");
  all.encoding_heads = all.n_heads;
  auto ma = make_model(all, 3), mz = make_model(zero, 3);
  Rng rng(6);
  const IndexArray t = random_tokens(1, 6, all.vocab, rng);
  const Array la = logits_of(*ma, t), lz = logits_of(*mz, t);
  CHECK(std::equal(la.begin(), la.end(), lz.begin()));
}

TEST_CASE("a layout makes an encoding's per-layer parameters for its own layers only, each read by a layer", "[layout]") {
  Rng rng(5);
  const IndexArray tok = random_tokens(2, 6, 11, rng);
  for (const std::string& name : EncodingRegistry::instance().names()) {
    if (EncodingRegistry::instance().get(name).input_level || name == "none") continue;
    INFO(name);
    ModelConfig c = small_config("none");
    c.n_layers = 4;
    c.layer_encodings = "none," + name;  // layers 1 and 3
    auto m = make_model(c);
    const Params defaults = resolve_encoding_params(name, {}, c.dims_for(name));
    const bool shared = defaults.values().count("shared_layers") && defaults.get_bool("shared_layers");
    Tensor logits = m->forward(tok, default_positions(2, 6));
    Array seed(logits.shape());
    for (auto& v : seed) v = static_cast<real>(rng.normal());
    logits.backward(seed);
    for (const auto& p : m->parameters()) {
      if (p.name.rfind("pos_" + name + ".", 0) != 0) continue;
      INFO(p.name);
      // a per-layer set is named by the layer's own index: never layer 0 or 2, which run NoPE (a table
      // shared by the layers is tables.0)
      std::smatch layer;
      if (!shared && std::regex_search(p.name, layer, std::regex(R"(\.(gates|tables|layers|mlps)\.([0-9]+)\.)")))
        CHECK((layer[2] == "1" || layer[2] == "3"));
      REQUIRE(p.tensor.has_grad());
      double norm = 0;
      for (real g : p.tensor.grad()) norm += std::abs(double(g));
      CHECK(norm > 0);
    }
    const ModelDims d = c.dims_for(name);
    CHECK(d.layers == std::vector<std::size_t>{1, 3});
    CHECK(dry_parameter_count(c) == m->num_parameters());
  }
  // The model-wide encoding in no layer of the layout makes no parameters.
  ModelConfig c = small_config("fire");
  c.layer_encodings = "none,rope";
  auto m = make_model(c);
  for (const auto& p : m->parameters()) CHECK(p.name.rfind("pos.", 0) != 0);
}
