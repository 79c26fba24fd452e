// Reading the PyTorch fixtures written by tests/pytorch/gen_fixtures.py: the model a fixture describes
// (from its metadata), its weights, and an allclose that reports how much of its tolerance the worst
// element uses. Shared by the layer parity test and the training parity tests.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/safetensors.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"
#include "test_paths.hpp"

namespace pelab::test {

// Paths of the fixtures "<prefix>*.safetensors", sorted.
inline std::vector<std::string> fixture_files(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(PELAB_FIXTURES_DIR)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".safetensors") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string fixture_name(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// The encoding parameters recorded in the metadata (a JSON object), typed by the pelab encoding's spec.
// The generator records them resolved, so the keys must be exactly the spec's: a pelab parameter the
// PyTorch reference does not know, or the reverse, throws Error naming it.
inline std::map<std::string, Value> fixture_encoding_params(const SafeTensors& st) {
  const std::string enc = st.metadata.at("encoding");
  const nlohmann::json given = nlohmann::json::parse(st.metadata.at("encoding_params"));
  const EncodingSpec& spec = EncodingRegistry::instance().get(enc);
  std::map<std::string, Value> out;
  for (const auto& ps : spec.params) {
    if (!given.contains(ps.key))
      throw Error("fixture of encoding '" + enc + "' does not record its parameter '" + ps.key +
                  "': teach tests/pytorch/pelab_ref.py about it and regenerate");
    const nlohmann::json& v = given.at(ps.key);
    switch (ps.type) {
      case ValueType::boolean: out[ps.key] = Value(v.get<bool>()); break;
      case ValueType::integer: out[ps.key] = Value(v.get<std::int64_t>()); break;
      case ValueType::number: out[ps.key] = Value(v.get<double>()); break;
      case ValueType::string: {
        // A bias file recorded as a relative path (the abc fixture's abc_bias.txt) lies beside the fixtures.
        std::string s = v.get<std::string>();
        if (ps.key == "bias_file" && !s.empty() && s[0] != '/') s = std::string(PELAB_FIXTURES_DIR) + "/" + s;
        out[ps.key] = Value(s);
        break;
      }
    }
  }
  for (const auto& [key, v] : given.items())
    if (!out.count(key)) throw Error("fixture of encoding '" + enc + "' records a parameter '" + key +
                                     "' that pelab's encoding does not have");
  return out;
}

// The forward options of a fixture's batch: its digit indices (input.digit_index, written for encodings
// that read them: abacus) when it has them.
inline ForwardOptions fixture_forward_options(const SafeTensors& st) {
  ForwardOptions fo;
  if (st.ints.count("input.digit_index")) fo.digit_index = &st.ints.at("input.digit_index");
  return fo;
}

// The model the fixture's metadata describes (dropout 0, as in the reference).
inline ModelConfig fixture_model_config(const SafeTensors& st) {
  const nlohmann::json cfg = nlohmann::json::parse(st.metadata.at("config"));
  ModelConfig c;
  c.vocab = cfg.at("vocab").get<std::size_t>();
  c.d_model = cfg.at("d_model").get<std::size_t>();
  c.n_layers = cfg.at("n_layers").get<std::size_t>();
  c.n_heads = cfg.at("n_heads").get<std::size_t>();
  c.d_ff = cfg.at("d_mlp").get<std::size_t>();
  c.ln_eps = cfg.at("ln_eps").get<real>();
  c.train_seq_len = cfg.at("seq_len").get<std::size_t>();
  c.causal = cfg.value("causal", true);
  c.dropout = 0;
  c.encoding = st.metadata.at("encoding");
  c.encoding_params = fixture_encoding_params(st);
  if (cfg.contains("attention")) {  // [attention] scaling (layers/attention_scaling.hpp)
    const auto& a = cfg.at("attention");
    c.attention.scaling = a.value("scaling", std::string("none"));
    c.attention.temperature = a.value("temperature", 1.0);
    c.attention.log_length_clamp = a.value("log_length_clamp", true);
    c.attention.log_length_base = a.value("log_length_base", std::size_t(0));
    c.attention.window = a.value("window", std::string("0"));
    c.attention.chunk = a.value("chunk", std::string("none"));  // chunked attention, temperature tuning
    c.attention.temperature_tuning = a.value("temperature_tuning", std::string("0"));
    c.attention.tuning_floor_scale = a.value("tuning_floor_scale", 8192.0);
    c.attention.tuning_attn_scale = a.value("tuning_attn_scale", 0.1);
    c.attention.tuning_in_training = a.value("tuning_in_training", false);
  }
  c.qk_norm = cfg.value("qk_norm", std::string("off"));  // [attention] qk_norm, [canon] (issue 46)
  if (cfg.contains("canon")) {
    const auto& k = cfg.at("canon");
    c.canon.points = k.value("points", std::string());
    c.canon.kernel = k.value("kernel", std::size_t(4));
    c.canon.residual = k.value("residual", true);
  }
  if (cfg.contains("loop")) {  // [loop]: looped depth (layers/transformer.hpp LoopSettings)
    const auto& l = cfg.at("loop");
    c.loop.first = l.value("first", std::size_t(0));
    c.loop.blocks = l.value("blocks", std::size_t(0));
    c.loop.times = l.value("times", std::size_t(1));
    c.loop.rule = l.value("rule", std::string("fixed"));
    c.loop.per_token = l.value("per_token", 1.0);
    c.loop.offset = l.value("offset", std::int64_t(0));
  }
  c.layer_encodings = cfg.value("layers", std::string());
  c.encoding_heads = cfg.value("heads", std::size_t(0));  // [encoding] layers and the others' parameters
  if (cfg.contains("layer_params"))
    for (const auto& [name, params] : cfg.at("layer_params").items())
      for (const auto& [key, v] : params.items())
        c.layer_encoding_params[name][key] = v.is_boolean() ? Value(v.get<bool>())
                                             : v.is_number_integer() ? Value(v.get<std::int64_t>())
                                             : v.is_number() ? Value(v.get<double>())
                                                             : Value(v.get<std::string>());
  return c;
}

// Sets every parameter of `model` to the fixture's tensor "<prefix><name>" (present, same shape).
inline void set_fixture_weights(const SafeTensors& st, Transformer& model, const std::string& prefix = "") {
  for (const auto& p : model.parameters()) {
    INFO("parameter " << prefix << p.name);
    REQUIRE(st.floats.count(prefix + p.name) == 1);
    const Array& w = st.floats.at(prefix + p.name);
    REQUIRE(w.shape() == p.tensor.shape());
    Tensor t = p.tensor;
    t.mutable_value() = w;
  }
}

// allclose(got, want, rtol, atol) over any number of calls, remembering the worst element.
struct Compare {
  double worst_abs = 0;
  std::string worst_where;
  double worst_ratio = 0;  // max of err / (atol + rtol |want|): the tolerance use, > 1 fails
  std::string ratio_where;
  bool ok = true;

  void add(double got, double want, double rtol, double atol, const std::string& where) {
    const double err = std::abs(got - want);
    const double ratio = err / (atol + rtol * std::abs(want));
    if (!(ratio <= 1)) ok = false;
    const auto at = [&] { return where + ": " + std::to_string(got) + " vs " + std::to_string(want); };
    if (!(ratio <= worst_ratio)) worst_ratio = ratio, ratio_where = at();
    if (err > worst_abs) worst_abs = err, worst_where = at();
  }
};

// One CHECK per comparison, naming its worst element.
inline void check_ok(const Compare& c, const std::string& what) {
  INFO("worst " << what << ": " << c.ratio_where << " (tolerance use " << c.worst_ratio << ")");
  CHECK(c.ok);
}

inline void allclose(const Array& got, const Array& want, double rtol, double atol, const std::string& what,
                     Compare& c) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.size() > 0);
  for (std::size_t i = 0; i < got.size(); ++i)
    c.add(got.data()[i], want.data()[i], rtol, atol, what + "[" + std::to_string(i) + "]");
}

// A fixture's logits at 1x, 2x and 4x its training length ("input." / "out.logits", then "long.N.*", as
// gen_fixtures.py writes them for LONGER encodings) against the model it describes, one CHECK per length,
// each printed with its tolerance use. Returns the number of lengths compared.
inline std::size_t check_long_logits(const std::string& fixture) {
  const SafeTensors st = load_safetensors(std::string(PELAB_FIXTURES_DIR) + "/" + fixture + ".safetensors");
  Transformer model(fixture_model_config(st));
  set_fixture_weights(st, model);
  const std::size_t L = model.config().train_seq_len;
  std::size_t lengths = 0;
  for (std::size_t n : {L, 2 * L, 4 * L}) {
    const std::string pre = n == L ? "input." : "long." + std::to_string(n) + ".";
    const std::string out = n == L ? "out.logits" : pre + "logits";
    INFO(fixture << " at " << n << " tokens");
    REQUIRE(st.ints.count(pre + "tokens") == 1);
    NoGrad ng;
    const Tensor logits = model.forward(st.get_int(pre + "tokens"), st.get_int(pre + "positions"));
    Compare c;
    allclose(logits.value(), st.get_float(out), 1e-5, 3e-6, "logits", c);
    std::printf("parity %-28s %3zu tokens: logits worst %.2e, tolerance use %.2f\n", fixture.c_str(), n,
                c.worst_abs, c.worst_ratio);
    INFO("worst tolerance use " << c.worst_ratio << " at " << c.ratio_where);
    CHECK(c.worst_ratio <= 1.0);
    ++lengths;
  }
  return lengths;
}

}  // namespace pelab::test
