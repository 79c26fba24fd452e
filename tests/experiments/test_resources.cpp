// The memory estimate (experiments/run/resources.hpp) against what the caching allocator actually hands
// out for one training step, one evaluation batch and one probe forward, for every encoding, where
// activations dominate; what every encoding declares and the parameter count against the built
// model; the speed of a refusal; the limit and its message.
#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>

#include "sanitized.hpp"
#include "core/allocator.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/run/resources.hpp"
#include "layers/positional/encoding.hpp"
#include "training/optimizer_registry.hpp"
#include "training/positions.hpp"
#include "training/trainer.hpp"
#include "test_paths.hpp"

using namespace pelab;

namespace {

RunSpec spec_of(const std::string& encoding, std::size_t train_len, std::size_t batch,
                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"encoding.name=" + encoding, "task.train_len=" + std::to_string(train_len),
                                   "train.batch_size=" + std::to_string(batch)};
  if (EncodingRegistry::instance().get(encoding).reads_digit_index) sets.push_back("task.name=addition");  // abacus
  sets.insert(sets.end(), extra.begin(), extra.end());
  return parse_config("[model]\nd_model = 32\nn_layers = 2\nn_heads = 4\n[task]\nname = \"copy\"\n"
                      "[eval]\nsamples = 16\nbatch_size = 16\n",
                      "res.toml", sets)
      .runs.at(0);
}

// The most bytes the caching allocator held from the system while building the model and its optimizer
// and running one training step, starting from an emptied cache: the step's high-water mark (its own
// counter, Stats::peak_system_bytes: cached blocks may be given back on the way, core/allocator.hpp).
std::size_t measured_training(const RunSpec& spec) {
  memory::release_cache();
  const std::size_t before = memory::stats().system_bytes;
  {
    Transformer m(spec.model);
    Rng rng(1);
    init_parameters(m, rng);
    OptimizerCommon common;
    auto opt = make_optimizer(spec.config.train.optimizer, {}, common, m.parameters());
    Rng data(2), prng(3);
    Batch b = spec.task->sample(data, spec.config.train.batch_size, spec.config.train_len, spec.config.train_len);
    assign_positions(b, {spec.config.train.positions, spec.config.train.max_position}, prng);
    Tensor loss = cross_entropy(m.forward(b.tokens, b.positions), b.targets, &b.mask);
    loss.backward();
    opt->step(1e-3);
  }
  Tape::current().clear();
  return memory::stats().peak_system_bytes - before;
}

// A forward without a tape of one batch, keeping every layer's attention maps (a probe) or not.
std::size_t measured_forward(const RunSpec& spec, std::size_t n, std::size_t batch, bool maps_too) {
  memory::release_cache();
  const std::size_t before = memory::stats().system_bytes;
  {
    Transformer m(spec.model);
    Rng rng(1);
    init_parameters(m, rng);
    m.set_training(false);
    NoGrad ng;
    Batch b = spec.task->eval_batch(7, batch, n);
    Rng prng(3);
    assign_positions(b, eval_positions(spec.config), prng);
    std::vector<Array> maps;
    ForwardOptions fo;
    if (maps_too) fo.attention_maps = &maps;
    if (b.has_digit_index()) fo.digit_index = &b.digit_index;
    const Tensor logits = m.forward(b.tokens, b.positions, fo);
  }
  return memory::stats().peak_system_bytes - before;
}
std::size_t measured_probe(const RunSpec& spec, std::size_t n, std::size_t batch) {
  return measured_forward(spec, n, batch, true);
}
// One forward of an eval batch (eval.batch_size rows), what ResourceModel::evaluation estimates;
// evaluate_length may run those rows in several passes (experiments/eval/evaluate.cpp).
std::size_t measured_evaluation(const RunSpec& spec, std::size_t n) {
  return measured_forward(spec, n, spec.config.eval.batch_size, false);
}

// Every registered encoding with its defaults, and options that change what an encoding allocates.
struct Case {
  std::string encoding;
  std::vector<std::string> sets;
};
std::vector<Case> encoding_cases() {
  std::vector<Case> v;
  for (const auto& name : EncodingRegistry::instance().names()) v.push_back({name, {}});
  v.push_back({"pope", {"encoding.pope.phase_bias=\"zeros\""}});
  v.push_back({"grape_a", {"encoding.grape_a.rate=\"gated\""}});
  v.push_back({"grape_a", {"encoding.grape_a.lift=\"constant\"", "encoding.grape_a.learn=false"}});
  v.push_back({"grape_a", {"encoding.grape_a.lift=\"key\""}});
  v.push_back({"grape_m", {"encoding.grape_m.variant=\"comrope\"", "encoding.grape_m.per_head=true"}});
  v.push_back({"grape_m", {"encoding.grape_m.learn=false"}});
  v.push_back({"abc", {"encoding.abc.bias_file=\"" + std::string(PELAB_FIXTURES_DIR) + "/abc_bias.txt\""}});  // its bias
  // QK-norm and Canon layers (issue 46)
  v.push_back({"rope", {"attention.qk_norm=\"on\""}});
  v.push_back({"none", {"canon.points=\"ABCD\""}});
  v.push_back({"alibi", {"canon.points=\"BD\"", "canon.kernel=3", "attention.qk_norm=\"on,off\""}});
  v.push_back({"rope", {"loop.blocks=1", "loop.times=3"}});  // looped depth: block 0 applied three times
  return v;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// The two things an encoding still declares (EncodingSpec::relative_kv, replaces_softmax: they decide
// whether [encoding] heads may restrict it) against what it builds.
TEST_CASE("every encoding declares relative keys and values and its normalizer as built", "[resources]") {
  std::size_t kv = 0, normalizers = 0;
  for (const auto& [name, sets] : encoding_cases()) {
    const RunSpec spec = spec_of(name, 8, 4, with({"model.d_ff=48"}, sets));
    const ModelDims d = spec.model.dims();
    const EncodingSpec& es = EncodingRegistry::instance().get(name);
    const auto enc = make_encoding(name, resolve_encoding_params(name, spec.model.encoding_params, d), d);
    INFO(name << " " << (sets.empty() ? "" : sets[0]));
    const IndexArray pos = default_positions(4, 20);
    enc->begin_forward(pos);
    const bool has_kv = enc->relative_kv(AttentionContext{pos, 0, true}).defined();
    AttentionOptions o;
    enc->choose_normalizer(o);
    const bool own_normalizer = o.normalizer != Normalizer::softmax;
    CHECK(es.relative_kv == has_kv);
    CHECK(es.replaces_softmax == own_normalizer);
    kv += has_kv, normalizers += own_normalizer;
  }
  CHECK(kv >= 1);  // shaw
  CHECK(normalizers >= 1);  // stick_breaking
}

TEST_CASE("the parameter count without building the model matches the model for every encoding", "[resources]") {
  std::size_t checked = 0;
  for (const auto& enc : EncodingRegistry::instance().names())
    for (const char* tie : {"false", "true"}) {
      RunSpec spec;
      try {
        spec = spec_of(enc, 8, 4, {std::string("model.tie_embeddings=") + tie, "model.d_ff=48"});
      } catch (const Error& e) {  // an encoding may refuse tied embeddings (concat narrows the token table)
        INFO(enc << ": " << e.what());
        CHECK(std::string(tie) == "true");
        continue;
      }
      ++checked;
      const Transformer m(spec.model);
      const ResourceModel rm(spec);
      INFO(enc << " tie " << tie);
      CHECK(rm.parameters() == m.num_parameters());
      CHECK(count_parameters(spec.model) == m.num_parameters());
    }
  CHECK(checked > EncodingRegistry::instance().names().size());
  // A learned attention temperature adds one parameter per head and layer; relu and gelu_tanh MLPs.
  for (const char* set : {"attention.scaling=learned", "model.activation=relu", "attention.qk_norm=\"on\"",
                          "canon.points=\"ABCD\""}) {
    const RunSpec spec = spec_of("rope", 8, 4, {set});
    INFO(set);
    CHECK(count_parameters(spec.model) == Transformer(spec.model).num_parameters());
  }
}

TEST_CASE("the memory estimate is within 0.9-1.4x of the allocator's peak for every encoding", "[resources]") {
  // Long sequences, so that activations (attention's (B, H, T, T) and the encodings' pair tables)
  // dominate; contiguous ids (pair tables built once) and randomized ones (per row).
  const std::size_t len = 64, batch = 8;
  for (const auto& [enc, sets] : encoding_cases())
    for (const char* mode : {"contiguous", "randomized"}) {
      const RunSpec spec = spec_of(enc, len, batch, with({std::string("train.positions=") + mode}, sets));
      const ResourceModel rm(spec);
      const MemoryEstimate et = rm.training(), ee = rm.evaluation(len, 16), ep = rm.probe(len, 4);
      const double est_t = double(et.total()), got_t = double(measured_training(spec));
      const double est_e = double(ee.total()), got_e = double(measured_evaluation(spec, len));
      const double est_p = double(ep.total()), got_p = double(measured_probe(spec, len, 4));
      std::printf("%-14s %-10s train est %9s got %9s (%.2f)  eval est %9s got %9s (%.2f)  probe est %9s got %9s (%.2f)\n",
                  enc.c_str(), mode, format_bytes(est_t).c_str(), format_bytes(got_t).c_str(), est_t / got_t,
                  format_bytes(est_e).c_str(), format_bytes(got_e).c_str(), est_e / got_e,
                  format_bytes(est_p).c_str(), format_bytes(got_p).c_str(), est_p / got_p);
      INFO(enc << " " << mode << ": training " << format_bytes(est_t) << " vs " << format_bytes(got_t) << ", evaluation "
               << format_bytes(est_e) << " vs " << format_bytes(got_e) << ", probe " << format_bytes(est_p) << " vs "
               << format_bytes(got_p));
      CHECK(et.activations > 2 * (et.weights + et.gradients + et.optimizer));  // the regime this test is about
      CHECK(est_t / got_t >= 0.9);
      CHECK(est_t / got_t <= 1.4);
      CHECK(est_e / got_e >= 0.9);
      CHECK(est_e / got_e <= 1.4);
      CHECK(est_p / got_p >= 0.9);
      CHECK(est_p / got_p <= 1.4);
    }
}

TEST_CASE("a config far too large is refused in well under a second, without building anything", "[resources]") {
  // FIRE's MLP over every pair at hidden 4096 and 8192 tokens: terabytes. The estimate is arithmetic.
  const RunSpec spec = spec_of("fire", 4096, 8, {"encoding.fire.hidden=4096"});
  MemoryLimit limit;
  limit.bytes = std::size_t(100) << 20;
  limit.source = "--memory-limit 100";
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(check_memory(spec, limit, true), Error);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(secs << " s");
  CHECK(secs < 1.0);
  CHECK(ResourceModel(spec).training().total() > (std::size_t(1) << 40));  // over a TiB
}

namespace {

// An encoding of the test tree that allocates its own raw tables in begin_forward and declares nothing
// about memory: a (1, T, T) int32 table of |p_i - p_j| and from it a (1, H, T, T) bias of -slope_h |p_i - p_j|,
// both kept across the layers (and the bias for backward). Its one concession to the dry run is the
// guard on its fill loop (a dry run has no values; without it the run faults at once).
class RawTables final : public PositionalEncoding {
 public:
  explicit RawTables(std::size_t heads) : heads_(heads) {}
  void begin_forward(const IndexArray& positions) override {
    const std::size_t T = positions.shape()[1];
    IndexArray distance(Shape{1, T, T});
    Array bias(Shape{1, heads_, T, T});
    if (!shape_only())
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) {
          distance(0, i, j) = std::abs(positions(0, i) - positions(0, j));
          for (std::size_t h = 0; h < heads_; ++h) bias(0, h, i, j) = -real(h + 1) / 8 * real(distance(0, i, j));
        }
    distance_ = std::move(distance);
    bias_ = Tensor(std::move(bias));
  }
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext&) override { return bias_; }

 private:
  std::size_t heads_;
  IndexArray distance_;
  Tensor bias_;
};

// Registered for one test's duration (other tests iterate the registry and run the CLI by name).
struct ScopedRawTables {
  ScopedRawTables() {
    EncodingRegistry::instance().add(
        encoding_spec("raw_tables_test", "a test encoding with raw tables and no declarations")
            .make([](const Params&, const ModelDims& d) { return std::make_unique<RawTables>(d.n_heads); })
            .spec());
  }
  ~ScopedRawTables() { EncodingRegistry::instance().remove("raw_tables_test"); }
};

}  // namespace

TEST_CASE("an encoding that declares nothing and builds raw tables gets a correct estimate", "[resources]") {
  const ScopedRawTables registered;
  const std::size_t len = 64, batch = 8;
  const RunSpec spec = spec_of("raw_tables_test", len, batch);
  const ResourceModel rm(spec);
  const double est_t = double(rm.training().total()), got_t = double(measured_training(spec));
  const double est_e = double(rm.evaluation(len, 16).total()), got_e = double(measured_evaluation(spec, len));
  const double est_p = double(rm.probe(len, 4).total()), got_p = double(measured_probe(spec, len, 4));
  INFO("training " << format_bytes(est_t) << " vs " << format_bytes(got_t) << ", evaluation " << format_bytes(est_e)
                   << " vs " << format_bytes(got_e) << ", probe " << format_bytes(est_p) << " vs " << format_bytes(got_p));
  for (const double ratio : {est_t / got_t, est_e / got_e, est_p / got_p}) {
    CHECK(ratio >= 0.9);
    CHECK(ratio <= 1.4);
  }
}

TEST_CASE("at the CLI's largest sizes a config is accepted or refused in under a second", "[resources][timed]") {
  struct Big {
    const char* what;
    RunSpec spec;
    bool train;
  };
  // Evaluation at T = 100 000 (ALiBi and FIRE by query tiles), d_model 65 536, FIRE's hidden 4096.
  const std::vector<Big> cases = {
      {"eval T=100000 alibi", spec_of("alibi", 64, 8, {"eval.lengths=[100000]"}), false},
      {"eval T=100000 fire", spec_of("fire", 64, 8, {"eval.lengths=[100000]", "encoding.fire.hidden=4096"}), false},
      {"train d_model 65536", spec_of("rope", 64, 8, {"model.d_model=65536", "model.n_heads=8"}), true},
      {"train fire hidden 4096", spec_of("fire", 4096, 8, {"encoding.fire.hidden=4096"}), true},
      {"train t5 T=100000", spec_of("t5", 100000, 1), true},
  };
  for (const Big& c : cases)
    for (const std::size_t mb : {std::size_t(100), std::size_t(1) << 40}) {  // refused; accepted
      MemoryLimit limit;
      limit.bytes = mb << 20;
      limit.source = "--memory-limit " + std::to_string(mb);
      // CPU time, not wall: on a shared machine (load 9 on 2 cores) a process gets a fraction of a core.
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      bool refused = false;
      try {
        check_memory(c.spec, limit, c.train);
      } catch (const Error&) {
        refused = true;
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      std::printf("%-24s limit %8zu MiB: %s in %.3f s (CPU %.3f s)\n", c.what, mb, refused ? "refused" : "accepted",
                  secs, cpu);
      INFO(c.what << " at " << mb << " MiB: " << secs << " s, CPU " << cpu << " s");
      CHECK(refused == (mb == 100));
      if (!test::kAddressSanitizer) CHECK(cpu < 1.0);  // sanitized builds run 3-5x slower: the decision is checked, not the time
    }
}

TEST_CASE("forward_bytes of a ModelConfig agrees with the run's evaluation and probe estimates", "[resources]") {
  for (const char* enc : {"none", "alibi", "t5"}) {
    const RunSpec spec = spec_of(enc, 48, 8);
    const ResourceModel rm(spec);
    const std::size_t T = spec.task->sequence_length(48);
    INFO(enc);
    CHECK(forward_bytes(spec.model, 16, T) == rm.evaluation(48, 16).total());
    CHECK(forward_bytes(spec.model, 16, T, true) == rm.probe(48, 16).total());
    // The maps: every layer's (16, H, T, T) kept instead of one at a time.
    const std::size_t map = 16 * spec.model.n_heads * T * T * sizeof(real);
    CHECK(forward_bytes(spec.model, 16, T, true) >= forward_bytes(spec.model, 16, T) + (spec.model.n_layers - 1) * map);
    // Without maps, attention streams query tiles and these encodings give their bias by tiles: linear
    // in the length (four times the tokens, at most four times the bytes). The maps stay quadratic.
    CHECK(forward_bytes(spec.model, 1, 4096) <= 4 * forward_bytes(spec.model, 1, 1024));
    CHECK(forward_bytes(spec.model, 1, 4096, true) > 10 * forward_bytes(spec.model, 1, 1024, true));
  }
}

// [slow]: 18 encodings x 2 position modes of real evaluation at 300 tokens (25-60 s); the tiled forward itself
// runs sanitized in tests/layers/test_streaming_forward.cpp.
TEST_CASE("past one bias tile, the evaluation estimate follows the tiled forward", "[resources][slow]") {
  // 300 tokens: three bias tiles (kBiasQueryTile = 128), five attention tiles; per-row ids too.
  const std::size_t len = 300, batch = 8;
  for (const char* enc : {"none", "alibi", "t5", "kerple", "fire", "rope", "fox", "selective", "cope", "dynamic_bias",
                          "transformer_xl", "dape", "shaw", "xpos", "hope", "path", "grape_m", "grape_a"})
    for (const char* mode : {"contiguous", "randomized"}) {
      const RunSpec spec = spec_of(enc, len, batch, {std::string("train.positions=") + mode});
      const MemoryEstimate ee = ResourceModel(spec).evaluation(len, spec.config.eval.batch_size);
      const double est = double(ee.total()), got = double(measured_evaluation(spec, len));
      INFO(enc << " " << mode << ": evaluation " << format_bytes(est) << " vs " << format_bytes(got));
      CHECK(est / got >= 0.9);
      CHECK(est / got <= 1.4);
    }
}

TEST_CASE("check_memory(what, bytes, setting) refuses above the limit naming the setting, estimate and limit",
          "[resources]") {
  MemoryLimit limit;
  limit.bytes = 1024 * 1024;
  limit.source = "--memory-limit 1";
  CHECK_NOTHROW(check_memory("probing length 64", 1024 * 1024, "--lengths", limit));
  try {
    check_memory("probing length 4096", 3 * 1024 * 1024, "--lengths", limit);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.rfind("--lengths: probing length 4096 needs about 3.00 MiB", 0) == 0);
    CHECK(m.find("the limit is 1.00 MiB (--memory-limit 1;") != std::string::npos);
  }
  limit.bytes = 0;  // no check
  CHECK_NOTHROW(check_memory("anything", std::size_t(1) << 60, "--lengths", limit));
}
