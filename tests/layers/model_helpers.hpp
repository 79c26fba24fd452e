// Small helpers shared by the layer tests.
#pragma once

#include "core/rng.hpp"
#include "layers/transformer.hpp"

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
