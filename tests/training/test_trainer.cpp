// The training loop: it learns, resumes bit-identically, stops cleanly on request and on non-finite values.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include <unistd.h>

#include "training/checkpoint.hpp"
#include "training/signals.hpp"
#include "training/trainer.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

// Copy: BOS x1..xn SEP x1..xn, loss on the copied half. Vocabulary: 0 PAD, 1 BOS, 2 SEP, 3.. symbols.
Batch copy_batch(Rng& rng, std::size_t B, std::size_t n, std::size_t symbols) {
  const std::size_t T = 2 * n + 1;  // tokens fed (the last copied symbol is only a target)
  Batch b;
  b.tokens = IndexArray(Shape{B, T});
  b.targets = IndexArray(Shape{B, T});
  b.mask = Array(Shape{B, T});
  b.mask.fill(0);
  for (std::size_t i = 0; i < B; ++i) {
    std::vector<std::int32_t> seq = {1};
    std::vector<std::int32_t> x(n);
    for (auto& v : x) v = static_cast<std::int32_t>(3 + rng.below(symbols));
    seq.insert(seq.end(), x.begin(), x.end());
    seq.push_back(2);
    seq.insert(seq.end(), x.begin(), x.end());
    for (std::size_t t = 0; t < T; ++t) {
      b.tokens(i, t) = seq[t];
      b.targets(i, t) = seq[t + 1];
      if (t >= n + 1) b.mask(i, t) = 1;
    }
    b.answer_begin.push_back(n + 1);
    b.answer_end.push_back(T);
  }
  return b;
}

ModelConfig tiny_model(const std::string& enc, std::size_t max_position = 0) {
  ModelConfig c;
  c.max_position = max_position;
  c.vocab = 3 + 6;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 2;
  c.encoding = enc;
  c.train_seq_len = 9;
  return c;
}

TrainConfig tiny_train(std::size_t steps) {
  TrainConfig t;
  t.steps = steps;
  t.batch_size = 16;
  t.lr = 3e-3;
  t.warmup = 10;
  t.min_lr = 1e-4;
  t.log_every = 10;
  t.seed = 7;
  return t;
}

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("pelab_test_trainer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

std::unique_ptr<Transformer> fresh_model(const std::string& enc, std::uint64_t seed, std::size_t max_position = 0) {
  auto m = std::make_unique<Transformer>(tiny_model(enc, max_position));
  Rng r = init_rng(seed);
  init_parameters(*m, r);
  return m;
}

TrainerOptions quiet_opts(const std::string& dir, bool resume = false) {
  TrainerOptions o;
  o.run_dir = dir;
  o.resume = resume;
  o.console = false;
  return o;
}

}  // namespace

TEST_CASE("end to end: a small model learns to copy within seconds", "[trainer][e2e]") {
  const std::string dir = temp_dir("learn");
  auto m = fresh_model("rope", 1);
  TrainConfig cfg = tiny_train(300);
  Trainer tr(*m, cfg, [](Rng& r) { return copy_batch(r, 16, 4, 6); }, quiet_opts(dir));
  const TrainResult res = tr.run();
  CHECK(res.status == TrainResult::Status::finished);
  CHECK(res.steps == 300);
  INFO("final loss " << res.final_loss);
  CHECK(res.final_loss < 0.3);  // chance level is log(6) = 1.79
  CHECK(fs::exists(dir + "/metrics.jsonl"));
  CHECK(fs::exists(dir + "/train.log"));
  REQUIRE(latest_checkpoint(dir).has_value());
  fs::remove_all(dir);
}

namespace {

// Runs 2N steps straight, and N steps + interrupt + resume N on a fresh model in another directory;
// returns both models' parameters.
struct ResumePair {
  std::vector<Parameter> straight, resumed;
  std::unique_ptr<Transformer> a, c;
};

ResumePair straight_and_resumed(const TrainConfig& cfg, std::size_t max_position, const std::string& tag) {
  const std::string a = temp_dir("straight_" + tag), b = temp_dir("resumed_" + tag);
  auto source = [](Rng& r) { return copy_batch(r, 8, 3, 6); };
  ResumePair out;
  out.a = fresh_model("learned", 3, max_position);
  Trainer(*out.a, cfg, source, quiet_opts(a)).run();

  auto mb = fresh_model("learned", 3, max_position);
  std::size_t calls = 0;
  clear_stop();
  auto interrupting = [&](Rng& r) {
    if (++calls == 20) request_stop();  // like Ctrl-C during step 20: the step finishes, then a checkpoint
    return source(r);
  };
  const TrainResult first = Trainer(*mb, cfg, interrupting, quiet_opts(b)).run();
  clear_stop();
  REQUIRE(first.status == TrainResult::Status::interrupted);
  REQUIRE(first.steps == 20);
  CHECK(first.message.find("interrupted at step 20") != std::string::npos);

  out.c = fresh_model("learned", 99, max_position);  // different init: every weight must come from the checkpoint
  const TrainResult second = Trainer(*out.c, cfg, source, quiet_opts(b, true)).run();
  REQUIRE(second.status == TrainResult::Status::finished);
  REQUIRE(second.steps == 40);
  // the resumed run's metrics hold each logged step once
  std::ifstream in(b + "/metrics.jsonl");
  std::string line;
  std::size_t lines = 0;
  while (std::getline(in, line)) ++lines;
  CHECK(lines == 4);  // steps 10, 20, 30, 40
  out.straight = out.a->parameters();
  out.resumed = out.c->parameters();
  fs::remove_all(a);
  fs::remove_all(b);
  return out;
}

std::size_t identical_params(const std::vector<Parameter>& pa, const std::vector<Parameter>& pc) {
  REQUIRE(pa.size() == pc.size());
  std::size_t identical = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    REQUIRE(pa[i].tensor.numel() == pc[i].tensor.numel());
    identical += std::equal(pa[i].tensor.data(), pa[i].tensor.data() + pa[i].tensor.numel(), pc[i].tensor.data());
  }
  return identical;
}

}  // namespace

TEST_CASE("resume is bit-identical: 2N steps straight equal N, interrupt, resume, N", "[trainer][resume]") {
  TrainConfig cfg = tiny_train(40);
  cfg.checkpoint_every = 0;
  const ResumePair p = straight_and_resumed(cfg, 0, "contiguous");
  CHECK(identical_params(p.straight, p.resumed) == p.straight.size());
}

TEST_CASE("resume is bit-identical under offset and randomized positions (the position RNG is checkpointed)",
          "[trainer][resume][positions]") {
  TrainConfig contiguous = tiny_train(40);
  const ResumePair base = straight_and_resumed(contiguous, 24, "base");
  for (PositionMode mode : {PositionMode::offset, PositionMode::randomized}) {
    INFO(position_mode_name(mode));
    TrainConfig cfg = tiny_train(40);
    cfg.positions = mode;
    cfg.max_position = 24;  // the learned table has 24 rows
    const ResumePair p = straight_and_resumed(cfg, 24, position_mode_name(mode));
    CHECK(identical_params(p.straight, p.resumed) == p.straight.size());
    // The ids reached the model: table row 20, past the 7 tokens of a copy of 3 symbols, got gradient
    // here (same init and data as the contiguous run, where it only decays).
    const Tensor table = p.a->parameter("pos.weight"), base_table = base.a->parameter("pos.weight");
    REQUIRE(table.shape() == Shape{24, 32});
    const std::size_t row = 20;
    CHECK(!std::equal(table.data() + row * 32, table.data() + (row + 1) * 32, base_table.data() + row * 32));
  }
}

TEST_CASE("a non-finite loss stops the run naming the step and keeps the last good checkpoint", "[trainer][nan]") {
  const std::string dir = temp_dir("nan");
  auto m = fresh_model("none", 5);
  TrainConfig cfg = tiny_train(30);
  cfg.checkpoint_every = 5;
  std::size_t calls = 0;
  Transformer* model = m.get();
  auto poison = [&](Rng& r) {
    if (++calls == 13) {  // corrupt a weight before step 13's forward
      Tensor w = model->parameter("head.weight");
      w.mutable_data()[0] = std::numeric_limits<real>::quiet_NaN();
    }
    return copy_batch(r, 8, 3, 6);
  };
  const TrainResult res = Trainer(*m, cfg, poison, quiet_opts(dir)).run();
  CHECK(res.status == TrainResult::Status::diverged);
  CHECK(res.message.find("step 13") != std::string::npos);
  const auto ck = latest_checkpoint(dir);
  REQUIRE(ck.has_value());
  CHECK(ck->find("step_000000010") != std::string::npos);
  auto check = fresh_model("none", 6);
  load_checkpoint(*ck, *check, nullptr);
  const Tensor w = check->parameter("head.weight");
  CHECK(std::isfinite(w.data()[0]));
  fs::remove_all(dir);
}

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }
std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
}  // namespace

TEST_CASE("resume says which checkpoint it uses and why it skipped newer ones and none usable is an error",
          "[trainer][resume]") {
  const std::string dir = temp_dir("fallback");
  TrainConfig cfg = tiny_train(30);
  cfg.checkpoint_every = 10;
  cfg.keep_checkpoints = 0;
  auto source = [](Rng& r) { return copy_batch(r, 4, 3, 6); };
  auto m = fresh_model("none", 1);
  REQUIRE(Trainer(*m, cfg, source, quiet_opts(dir)).run().status == TrainResult::Status::finished);
  const std::string ck = dir + "/checkpoints/";
  REQUIRE(list_checkpoints(dir).size() == 3);  // steps 10, 20, 30

  SECTION("an emptied newest checkpoint: resume uses the previous one and says why") {
    for (const auto& e : fs::directory_iterator(ck + "step_000000030")) fs::remove(e.path());
    TrainerOptions o = quiet_opts(dir, true);
    o.require_checkpoint = true;
    auto m2 = fresh_model("none", 2);
    const TrainResult r = Trainer(*m2, cfg, source, o).run();
    CHECK(r.status == TrainResult::Status::finished);
    const std::string log = read_all(dir + "/train.log");
    INFO(log);
    CHECK(has(log, "skipped checkpoint " + ck + "step_000000030"));
    CHECK(has(log, "incomplete"));
    CHECK(has(log, "resumed from " + ck + "step_000000020 at step 20"));
  }
  SECTION("every checkpoint damaged: an error naming each, even when starting fresh is allowed") {
    for (const char* s : {"step_000000010", "step_000000020", "step_000000030"})
      for (const auto& e : fs::directory_iterator(ck + s)) fs::remove(e.path());
    for (bool required : {true, false}) {
      TrainerOptions o = quiet_opts(dir, true);
      o.require_checkpoint = required;
      auto m2 = fresh_model("none", 2);
      const std::string msg = error_of([&] { Trainer(*m2, cfg, source, o).run(); });
      INFO(msg);
      CHECK(has(msg, "no usable checkpoint"));
      CHECK(has(msg, "step_000000010: incomplete"));
      CHECK(has(msg, "step_000000030: incomplete"));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("resume in a run directory without checkpoints: an error if required, else step 0", "[trainer][resume]") {
  const std::string dir = temp_dir("nockpt");
  TrainConfig cfg = tiny_train(10);
  auto source = [](Rng& r) { return copy_batch(r, 4, 3, 6); };
  TrainerOptions o = quiet_opts(dir, true);
  o.require_checkpoint = true;
  auto m = fresh_model("none", 1);
  const std::string msg = error_of([&] { Trainer(*m, cfg, source, o).run(); });
  INFO(msg);
  CHECK(has(msg, "no checkpoint in " + dir + "/checkpoints"));
  CHECK_FALSE(fs::exists(dir));  // nothing written

  o.require_checkpoint = false;
  const TrainResult r = Trainer(*m, cfg, source, o).run();
  CHECK(r.status == TrainResult::Status::finished);
  CHECK(r.steps == 10);
  CHECK(has(read_all(dir + "/train.log"), "starting from step 0"));
  fs::remove_all(dir);
}
