// The architecture features of issue 46 (what open models ship), as the tests that iterate the encoding
// registry iterate them too: an encoding variant with parameters of its own in some layers (Gemma 3's two
// RoPE bases), chunked local attention (Llama 4), Llama 4's attention temperature tuning, and their mix
// (iRoPE). Each is given twice: as settings of a ModelConfig (model tests) and as `--set` assignments of
// a config (end-to-end tests). Temperature tuning is on in training too here (tuning_in_training), so
// that the training-mode forwards of the tests run it.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "layers/transformer.hpp"

namespace pelab::test {

struct OpenModelFeature {
  std::string label;
  std::string encoding;                                    // [encoding] name
  std::vector<std::pair<std::string, std::string>> sets;  // "section.key", its TOML value
  bool relative;  // shifting every position id leaves the logits unchanged
  // The same settings on a ModelConfig whose encoding is already `encoding`.
  std::function<void(ModelConfig&)> apply;
};

inline const std::vector<OpenModelFeature>& open_model_features() {
  static const std::vector<OpenModelFeature> features = {
      {"variant rope,rope.global (bases 10 and 1000)", "rope",
       {{"encoding.layers", "\"rope,rope.global\""}, {"encoding.rope.base", "10.0"}, {"encoding.rope.global.base", "1000.0"}},
       true,
       [](ModelConfig& c) {
         c.layer_encodings = "rope,rope.global";
         c.encoding_params["base"] = Value(10.0);
         c.layer_encoding_params["rope.global"]["base"] = Value(1000.0);
       }},
      {"variant t5,t5.far (own tables)", "t5",
       {{"encoding.layers", "\"t5,t5.far\""}, {"encoding.t5.far.num_buckets", "8"}, {"encoding.t5.far.max_distance", "10"}},
       true,
       [](ModelConfig& c) {
         c.layer_encodings = "t5,t5.far";
         c.layer_encoding_params["t5.far"] = {{"num_buckets", Value(std::int64_t(8))}, {"max_distance", Value(std::int64_t(10))}};
       }},
      {"chunk 3 (rope)", "rope", {{"attention.chunk", "\"3\""}}, true, [](ModelConfig& c) { c.attention.chunk = "3"; }},
      {"chunk 4,none with window 0,2 (alibi)", "alibi", {{"attention.chunk", "\"4,none\""}, {"attention.window", "\"0,2\""}},
       true,
       [](ModelConfig& c) {
         c.attention.chunk = "4,none";
         c.attention.window = "0,2";
       }},
      {"temperature tuning (none, F = 2, a = 0.5)", "none",
       {{"attention.temperature_tuning", "\"1\""}, {"attention.tuning_floor_scale", "2.0"},
        {"attention.tuning_attn_scale", "0.5"}, {"attention.tuning_in_training", "true"}},
       true,
       [](ModelConfig& c) {
         c.attention.temperature_tuning = "1";
         c.attention.tuning_floor_scale = 2;
         c.attention.tuning_attn_scale = 0.5;
         c.attention.tuning_in_training = true;
       }},
      {"iRoPE (rope,none; chunk 3,none; tuning 0,1)", "rope",
       {{"encoding.layers", "\"rope,none\""}, {"attention.chunk", "\"3,none\""}, {"attention.temperature_tuning", "\"0,1\""},
        {"attention.tuning_floor_scale", "2.0"}, {"attention.tuning_in_training", "true"}},
       true,
       [](ModelConfig& c) {
         c.layer_encodings = "rope,none";
         c.attention.chunk = "3,none";
         c.attention.temperature_tuning = "0,1";
         c.attention.tuning_floor_scale = 2;
         c.attention.tuning_in_training = true;
       }},
  };
  return features;
}

}  // namespace pelab::test
