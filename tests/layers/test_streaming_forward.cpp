// A forward without a tape streams attention (query tiles, core/ops/attention.cpp) and asks encodings
// that can for their bias by query tiles (PositionalEncoding::bias_by_query_rows); with a tape it keeps
// everything for backward. The two must give the same logits for every registered encoding, every
// position mode, causal and bidirectional, plain and looped depth, at a length that is no multiple of either tile.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/ops/attention.hpp"
#include "core/tape.hpp"
#include "model_helpers.hpp"
#include "rel_diff.hpp"
#include "training/positions.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

constexpr std::size_t kT = 2 * kBiasQueryTile + 45;  // three bias tiles, the last partial; 5 query tiles
static_assert(kT % kAttentionQueryTile != 0, "a partial attention tile too");


// The model, or null when the encoding refuses this setting (e.g. stick-breaking without causal attention).
std::unique_ptr<Transformer> model_for(const std::string& name, bool causal, const LoopSettings& depth) {
  ModelConfig c = small_config(name);
  c.causal = causal;
  c.loop = depth;
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
  for (const EncodingAtDepth& e : encodings_at_depths())
    for (bool causal : {true, false}) {
      const std::string& name = e.name;
      auto m = model_for(name, causal, e.depth);
      if (!m) continue;
      INFO(depth_label(e.depth));
      if (m->encoding().bias_by_query_rows()) ++tiled;
      for (PositionMode mode : {PositionMode::contiguous, PositionMode::offset, PositionMode::randomized}) {
        INFO("encoding " << name << (causal ? ", causal" : ", bidirectional") << ", positions "
                         << position_mode_name(mode));
        Rng rng(3);
        Batch b;
        b.tokens = random_tokens(2, kT, 11, rng);
        assign_positions(b, {mode, 2 * kT}, rng);
        if (m->encoding().unsupported(*std::max_element(b.positions.begin(), b.positions.end()))) continue;
        if (e.depth.looped() && mode != PositionMode::contiguous) continue;  // looped: one mode, the test's time
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
