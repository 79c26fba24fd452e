// Shape-only execution of the whole model (issue #40; core/shape_only.hpp): for every registered encoding
// and the variants that change what it allocates, in training, evaluation (whole and by query tiles) and
// probes, with shared and per-row ids, the dry run's allocation trace amounts to the real run's: the
// same requests per size class, the same blocks live at once per class, the same peak live bytes and
// the same peak of a cold allocator (memory::TraceSummary). A kernel that forgets to skip faults; a
// buffer that a dry run forgets (or adds) shows as a difference, named with the case.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>

#include "core/allocator.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"
#include "test_paths.hpp"
#include "open_model_features.hpp"

using namespace pelab;

namespace {

enum class Mode { train, eval, probe };
const char* mode_name(Mode m) { return m == Mode::train ? "train" : m == Mode::eval ? "eval" : "probe"; }

struct Variant {
  std::string label;
  std::function<void(ModelConfig&)> set;
};

ModelConfig base_config(const std::string& encoding, std::size_t T) {
  ModelConfig c;
  c.vocab = 13, c.d_model = 32, c.n_layers = 2, c.n_heads = 4, c.d_ff = 48;
  c.encoding = encoding;
  c.train_seq_len = T;
  c.max_position = T + 8;  // per-row offsets below stay inside learned tables
  return c;
}

// Every registered encoding with its defaults, and the options that change what is allocated.
std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (const auto& name : EncodingRegistry::instance().names())
    v.push_back({name, [name](ModelConfig& c) { c.encoding = name; }});
  const auto enc = [](const std::string& name, std::map<std::string, Value> p) {
    return [name, p](ModelConfig& c) { c.encoding = name, c.encoding_params = p; };
  };
  v.push_back({"kerple power", enc("kerple", {{"variant", Value(std::string("power"))}})});
  v.push_back({"kerple shared", enc("kerple", {{"shared_layers", Value(true)}})});
  v.push_back({"fire shared head", enc("fire", {{"per_head", Value(false)}})});
  v.push_back({"fire shared layers", enc("fire", {{"shared_layers", Value(true)}})});
  v.push_back({"t5 per layer", enc("t5", {{"shared_layers", Value(false)}})});
  v.push_back({"pope zeros", enc("pope", {{"phase_bias", Value(std::string("zeros"))}})});
  v.push_back({"rope dropout", [](ModelConfig& c) { c.encoding = "rope", c.dropout = real(0.1); }});
  v.push_back({"alibi dropout", [](ModelConfig& c) { c.encoding = "alibi", c.dropout = real(0.1); }});
  v.push_back({"layout none,rope", [](ModelConfig& c) { c.encoding = "alibi", c.layer_encodings = "none,rope"; }});
  v.push_back({"layout t5,shaw", [](ModelConfig& c) { c.encoding = "t5", c.layer_encodings = "t5,shaw"; }});
  v.push_back({"window alibi", [](ModelConfig& c) { c.encoding = "alibi", c.attention.window = "0,5"; }});
  v.push_back({"window shaw", [](ModelConfig& c) { c.encoding = "shaw", c.attention.window = "4"; }});
  v.push_back({"heads rope", [](ModelConfig& c) { c.encoding = "rope", c.encoding_heads = 2; }});
  v.push_back({"heads alibi", [](ModelConfig& c) { c.encoding = "alibi", c.encoding_heads = 1; }});
  v.push_back({"log-length scaling", [](ModelConfig& c) { c.encoding = "rope", c.attention.scaling = "log_length"; }});
  v.push_back({"learned temperature", [](ModelConfig& c) { c.encoding = "alibi", c.attention.scaling = "learned"; }});
  for (const test::OpenModelFeature& f : test::open_model_features())  // issue 46's features (tests/open_model_features.hpp)
    v.push_back({f.label, [f](ModelConfig& c) { c.encoding = f.encoding, f.apply(c); }});
  // GRAPE-A: every lift under both rates, and the fixed omega (built once per forward in double)
  for (const char* rate : {"constant", "gated"})
    for (const char* lift : {"query_key", "query", "key", "constant"})
      v.push_back({std::string("grape_a ") + rate + " " + lift,
                   enc("grape_a", {{"rate", Value(std::string(rate))}, {"lift", Value(std::string(lift))}})});
  v.push_back({"grape_a fixed constant", enc("grape_a", {{"learn", Value(false)}, {"lift", Value(std::string("constant"))}})});
  v.push_back({"grape_a fixed query_key", enc("grape_a", {{"learn", Value(false)}})});
  // GRAPE-M: ComRoPE's signed omega, RoPE's fixed spectrum (the packed path), a spectrum per head
  v.push_back({"grape_m comrope", enc("grape_m", {{"variant", Value(std::string("comrope"))}})});
  v.push_back({"grape_m fixed", enc("grape_m", {{"learn", Value(false)}})});
  v.push_back({"grape_m per head", enc("grape_m", {{"per_head", Value(true)}, {"layout", Value(std::string("interleaved"))}})});
  // QK-norm and Canon layers (issue 46): per layer, every point, another kernel and no residual
  v.push_back({"qk_norm rope", [](ModelConfig& c) { c.encoding = "rope", c.qk_norm = "on"; }});
  v.push_back({"qk_norm on,off alibi", [](ModelConfig& c) { c.encoding = "alibi", c.qk_norm = "on,off"; }});
  v.push_back({"canon ABCD none", [](ModelConfig& c) { c.encoding = "none", c.canon.points = "ABCD"; }});
  v.push_back({"canon BD rope", [](ModelConfig& c) { c.encoding = "rope", c.canon = {"BD", 3, false}; }});
  // looped depth ([loop]): every application's activations kept for backward, the weights once
  v.push_back({"looped rope x3", [](ModelConfig& c) { c.encoding = "rope", c.loop.blocks = 1, c.loop.times = 3; }});
  v.push_back({"looped t5 by length", [](ModelConfig& c) {
                 c.encoding = "t5", c.loop.first = 1, c.loop.rule = "length", c.loop.per_token = 0.125, c.loop.offset = 1;
               }});
  // abc with a bias (without one it is NoPE): the two-head file of the property tests (model_helpers.hpp)
  v.push_back({"abc two heads", [](ModelConfig& c) {
                 c.encoding = "abc", c.n_heads = 2;
                 c.encoding_params = {{"bias_file", Value(std::string(PELAB_FIXTURES_DIR) + "/abc_bias_two_heads.txt")}};
               }});
  return v;
}

struct Inputs {
  IndexArray tokens, positions, targets, digits;  // (B, T)
};

Inputs inputs(std::size_t B, std::size_t T, bool shared) {
  Inputs in{IndexArray(Shape{B, T}), IndexArray(Shape{B, T}), IndexArray(Shape{B, T}), IndexArray(Shape{B, T})};
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      in.tokens(b, t) = std::int32_t((3 * t + b) % 13);
      in.targets(b, t) = std::int32_t((t + 2 * b) % 13);
      in.positions(b, t) = std::int32_t(t + (shared ? 0 : 2 * b));
      in.digits(b, t) = std::int32_t(t % 4);
    }
  return in;
}

// Builds the model and runs one forward (and backward when training) inside a ShapeOnly scope (dry) or
// TraceScopes (real: its parameters initialized between two of them, so that initialization, which a
// dry run never does, is not in the trace). The data are made outside both.
memory::TraceSummary traced_run(const ModelConfig& c, Mode mode, const Inputs& in, bool dry, Rng& drop) {
  memory::Trace all;
  Tape::current().clear();  // what an earlier test left recorded would be released inside the trace
  std::unique_ptr<ShapeOnly> scope = dry ? std::make_unique<ShapeOnly>() : nullptr;
  {
    auto rec = dry ? nullptr : std::make_unique<memory::TraceScope>();
    const auto pause = [&] {
      if (rec) all.events.insert(all.events.end(), rec->trace().events.begin(), rec->trace().events.end());
      rec.reset();
    };
    auto m = std::make_unique<Transformer>(c);
    if (!dry) {
      pause();
      Rng rng(1);
      init_parameters(*m, rng);
      rec = std::make_unique<memory::TraceScope>();
    }
    m->set_training(mode == Mode::train);
    ForwardOptions fo;
    fo.dropout_rng = &drop;
    fo.digit_index = &in.digits;
    std::vector<Array> maps;
    if (mode == Mode::probe) fo.attention_maps = &maps;
    if (mode == Mode::train) {
      cross_entropy(m->forward(in.tokens, in.positions, fo), in.targets).backward();
    } else {
      NoGrad ng;
      m->forward(in.tokens, in.positions, fo);
    }
    Tape::current().clear();
    maps.clear();
    m.reset();  // released inside the trace (and the dry scope) too
    pause();
  }
  if (dry) all = scope->trace();
  return all.summary();
}

}  // namespace

TEST_CASE("every encoding's shape-only trace equals the real run's (train, eval, probe)", "[shape_only]") {
  std::size_t cases = 0;
  for (const Variant& v : variants())
    for (Mode mode : {Mode::train, Mode::eval, Mode::probe})
      for (bool shared : {true, false})
        for (std::size_t T : {std::size_t(12), std::size_t(131)}) {
          if (T > 12 && mode != Mode::eval) continue;  // past one bias tile (kBiasQueryTile): evaluation only
          ModelConfig c = base_config("none", T);
          v.set(c);
          const Inputs in = inputs(2, T, shared);
          CAPTURE(v.label, mode_name(mode), shared, T);
          Rng real_drop(5), dry_drop(5);
          const memory::TraceSummary real_run = traced_run(c, mode, in, false, real_drop);
          const Rng::State before = dry_drop.state();
          const memory::TraceSummary dry = traced_run(c, mode, in, true, dry_drop);
          CHECK(dry_drop.state() == before);  // the dry run draws nothing
          CHECK(memory::fake_blocks_live() == 0);
          REQUIRE(real_run.peak_live_bytes > 0);
          CHECK(dry.requests == real_run.requests);
          CHECK(dry.peak_live == real_run.peak_live);
          CHECK(dry.peak_live_bytes == real_run.peak_live_bytes);
          CHECK(dry.peak_system_bytes == real_run.peak_system_bytes);
          ++cases;
        }
  CHECK(cases > 3 * 2 * EncodingRegistry::instance().names().size());
}
