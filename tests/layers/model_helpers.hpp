// Small helpers shared by the layer tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "layers/transformer.hpp"
#include "open_model_features.hpp"
#include "test_paths.hpp"

namespace pelab::test {

// `abc` adds nothing without a bias file (its documented identity); the tests that iterate the registry give
// it the two-head file gen_fixtures.py writes, so that they check its bias.
inline ModelConfig small_config(const std::string& encoding, std::map<std::string, Value> params = {}) {
  if (encoding == "abc" && params.empty())
    params["bias_file"] = Value(std::string(PELAB_FIXTURES_DIR) + "/abc_bias_two_heads.txt");
  ModelConfig c;
  c.vocab = 11;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.encoding = encoding;
  c.encoding_params = std::move(params);
  c.train_seq_len = 16;
  return c;
}

// The architecture features of issue 46 (QK-norm, Canon layers, and open_model_features.hpp's), each on an
// encoding, which the tests that iterate the encoding registry run too: label, the encoding, the settings on
// top of small_config. None reads position ids: each keeps its encoding's relative / absolute behaviour.
struct FeatureCase {
  std::string label, encoding;
  std::function<void(ModelConfig&)> apply;
};
inline std::vector<FeatureCase> feature_cases() {
  std::vector<FeatureCase> v = {{"qk_norm on (rope)", "rope", [](ModelConfig& c) { c.qk_norm = "on"; }},
          {"qk_norm on,off (alibi)", "alibi", [](ModelConfig& c) { c.qk_norm = "on,off"; }},
          {"canon ABCD (none)", "none", [](ModelConfig& c) { c.canon.points = "ABCD"; }},
          {"canon BD kernel 3 no residual + qk_norm (rope)", "rope",
           [](ModelConfig& c) { c.canon = {"BD", 3, false}, c.qk_norm = "on"; }},
          {"canon AC kernel 2 (learned)", "learned", [](ModelConfig& c) { c.canon = {"AC", 2, true}; }}};
  // and the open models' layouts and attention (encoding variants, chunks, temperature tuning: open_model_features.hpp)
  for (const OpenModelFeature& f : open_model_features()) v.push_back({f.label, f.encoding, f.apply});
  return v;
}
inline ModelConfig feature_config(const FeatureCase& f) {
  ModelConfig c = small_config(f.encoding);
  f.apply(c);
  return c;
}

// The depths the property tests run every encoding at: plain, and looped ([loop], layers/transformer.hpp
// LoopSettings): block 0 applied three times with its input injected, then block 1.
inline std::vector<LoopSettings> depth_variants() {
  LoopSettings looped;
  looped.first = 0, looped.blocks = 1, looped.times = 3;
  return {LoopSettings{}, looped};
}

inline std::string depth_label(const LoopSettings& l) { return l.looped() ? "looped depth (block 0 x 3)" : "plain depth"; }

// Every registered encoding at each of depth_variants(), for the tests that iterate the registry.
struct EncodingAtDepth {
  std::string name;
  LoopSettings depth;
};
inline std::vector<EncodingAtDepth> encodings_at_depths() {
  std::vector<EncodingAtDepth> out;
  for (const auto& name : EncodingRegistry::instance().names())
    for (const LoopSettings& d : depth_variants()) out.push_back({name, d});
  return out;
}

inline std::unique_ptr<Transformer> make_model(const ModelConfig& c, std::uint64_t seed = 1, double std = 0.3) {
  auto m = std::make_unique<Transformer>(c);
  Rng rng(seed);
  init_parameters(*m, rng, std, std);  // larger than the 0.02 default so positions visibly matter
  return m;
}

inline IndexArray random_tokens(std::size_t B, std::size_t T, std::size_t vocab, Rng& rng) {
  IndexArray t(Shape{B, T});
  for (auto& v : t) v = static_cast<std::int32_t>(rng.below(vocab));
  return t;
}

}  // namespace pelab::test
