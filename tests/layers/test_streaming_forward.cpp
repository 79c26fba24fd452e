// A forward without a tape streams attention (query tiles, core/ops/attention.cpp) and asks encodings
// that can for their bias by query tiles (PositionalEncoding::bias_by_query_rows); with a tape it keeps
// everything for backward. The two must give the same logits for every registered encoding, every
// position mode, causal and bidirectional, plain and looped depth, at a length that is no multiple of either tile.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "core/ops/attention.hpp"
#include "core/tape.hpp"
#include "model_helpers.hpp"
#include "open_model_features.hpp"
#include "rel_diff.hpp"
#include "training/positions.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

constexpr std::size_t kT = 2 * kBiasQueryTile + 45;  // three bias tiles, the last partial; 5 query tiles
static_assert(kT % kAttentionQueryTile != 0, "a partial attention tile too");


// The model, or null when the encoding refuses this setting (e.g. stick-breaking without causal attention).
std::unique_ptr<Transformer> model_for(ModelConfig c, bool causal) {
  c.causal = causal;
  c.train_seq_len = kT;  // tables sized from the training length cover every id below
  try {
    return make_model(c, 5);
  } catch (const Error&) {
    return nullptr;
  }
}

}  // namespace

TEST_CASE("a forward without a tape gives the logits of the taped one, every encoding and position mode",
          "[positional][streaming]") {
  std::size_t compared = 0, tiled = 0;
  // every encoding at each depth, then the features (model_helpers.hpp)
  std::vector<std::pair<std::string, ModelConfig>> cases;
  for (const EncodingAtDepth& e : encodings_at_depths()) {
    ModelConfig c = small_config(e.name);
    c.loop = e.depth;
    cases.push_back({e.depth.looped() ? e.name + ", " + depth_label(e.depth) : e.name, c});
  }
  for (const FeatureCase& f : feature_cases()) cases.push_back({f.label, feature_config(f)});
  for (const auto& [label, config] : cases)
    for (bool causal : {true, false}) {
      auto m = model_for(config, causal);
      if (!m) continue;
      if (m->encoding().bias_by_query_rows()) ++tiled;
      for (PositionMode mode : {PositionMode::contiguous, PositionMode::offset, PositionMode::randomized}) {
        INFO("encoding " << label << (causal ? ", causal" : ", bidirectional") << ", positions "
                         << position_mode_name(mode));
        Rng rng(3);
        Batch b;
        b.tokens = random_tokens(2, kT, 11, rng);
        assign_positions(b, {mode, 2 * kT}, rng);
        if (m->encoding().unsupported(*std::max_element(b.positions.begin(), b.positions.end()))) continue;
        if (config.loop.looped() && mode != PositionMode::contiguous) continue;  // looped: one mode, the test's time
        Array streamed;
        {
          NoGrad ng;
          streamed = m->forward(b.tokens, b.positions).value();
        }
        const Array taped = m->forward(b.tokens, b.positions).value();  // parameters require grad: recorded
        Tape::current().clear();
        CHECK(rel_diff(streamed, taped) < 1e-5);
        ++compared;
      }
    }
  CHECK(tiled >= 4);  // alibi, t5, kerple, fire at least
  CHECK(compared >= 80);
}
