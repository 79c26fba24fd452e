// The training loop pinned to PyTorch, step by step (as llm.c's test_gpt2 pins its loop): the real
// pelab::Trainer runs on the stream of batches stored in tests/fixtures/trainer_rope.safetensors, from the
// fixture's float32 initial weights, with the fixture's settings (warmup + cosine schedule, clipping that
// acts on some steps and not on others, AdamW with weight decay under pelab's decay rule, dropout 0).
// tests/pytorch/gen_fixtures.py ran the same loop in float64 from the same weights, so the comparison
// measures pelab's float32 error alone. Per-step loss, pre-clip gradient norm and learning rate come from
// the Trainer's own metrics.jsonl (log_every = 1); the final parameters from the model after run().
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "parity_fixture.hpp"
#include "training/trainer.hpp"
#include "test_paths.hpp"

using namespace pelab;
using namespace pelab::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Row `s` of an (S, B, T) array as a (B, T) array.
template <class A>
A step_slice(const A& all, std::size_t s) {
  const std::size_t B = all.shape()[1], T = all.shape()[2];
  A out(Shape{B, T});
  std::copy(all.data() + s * B * T, all.data() + (s + 1) * B * T, out.data());
  return out;
}

// A fresh run directory, removed again whatever happens.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / (name + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TrainConfig fixture_train_config(const SafeTensors& st) {
  const json t = json::parse(st.metadata.at("train"));
  TrainConfig c;
  c.optimizer = "adamw";
  c.steps = t.at("steps").get<std::size_t>();
  c.batch_size = t.at("batch").get<std::size_t>();
  c.schedule = t.at("schedule").get<std::string>();
  c.lr = t.at("peak_lr").get<double>();
  c.min_lr = t.at("min_lr").get<double>();
  c.warmup = t.at("warmup").get<std::size_t>();
  c.optimizer_params["adamw"] = {{"beta1", Value(t.at("betas").at(0).get<double>())},
                                 {"beta2", Value(t.at("betas").at(1).get<double>())},
                                 {"eps", Value(t.at("eps").get<double>())}};
  c.weight_decay = t.at("weight_decay").get<double>();
  c.decay_norm_and_bias = t.at("decay_norm_and_bias").get<bool>();
  c.decay_embeddings = t.at("decay_embeddings").get<bool>();
  c.grad_clip = t.at("clip_norm").get<double>();
  c.seed = t.at("seed").get<std::uint64_t>();  // unused: the batches are replayed, dropout is 0
  c.log_every = 1;                             // one metrics record per step
  c.eval_every = 0;
  c.checkpoint_every = 0;
  return c;
}

}  // namespace

TEST_CASE("Trainer matches PyTorch step by step: loss, gradient norm, learning rate, final parameters", "[parity]") {
  const SafeTensors st = load_safetensors(std::string(PELAB_FIXTURES_DIR) + "/trainer_rope.safetensors");
  Transformer model(fixture_model_config(st));
  set_fixture_weights(st, model);
  const TrainConfig cfg = fixture_train_config(st);

  const IndexArray& tokens = st.get_int("batch.tokens");    // (S, B, T)
  const IndexArray& targets = st.get_int("batch.targets");  // (S, B, T)
  const Array& mask = st.get_float("batch.mask");           // (S, B, T)
  const Array& want_loss = st.get_float("train.losses");    // (S): loss of step s's batch before its update
  const Array& want_norm = st.get_float("train.grad_norms");
  const Array& want_lr = st.get_float("train.lrs");
  const std::size_t S = cfg.steps;
  REQUIRE(tokens.dimension() == 3);
  REQUIRE(tokens.shape()[0] == S);
  REQUIRE(targets.shape() == tokens.shape());
  REQUIRE(mask.shape() == Shape(tokens.shape().begin(), tokens.shape().end()));
  REQUIRE(tokens.shape()[1] == cfg.batch_size);
  REQUIRE(want_loss.size() == S);
  REQUIRE(want_norm.size() == S);
  REQUIRE(want_lr.size() == S);
  // The fixture must exercise both sides of clipping and the warmup.
  std::size_t clipped = 0;
  for (std::size_t s = 0; s < S; ++s) clipped += want_norm(s) > cfg.grad_clip;
  CHECK(clipped > 0);
  CHECK(clipped < S);
  CHECK(cfg.warmup > 0);
  CHECK(cfg.warmup < S);

  // The source replays the stored batches in order and ignores the data RNG.
  std::size_t served = 0;
  auto source = [&](Rng&) {
    if (served >= S) throw Error("the trainer asked for more batches than the fixture holds");
    Batch b;
    b.tokens = step_slice(tokens, served);
    b.targets = step_slice(targets, served);
    b.mask = step_slice(mask, served);
    ++served;
    return b;
  };
  const TempDir dir("pelab_test_parity_trainer_");
  TrainerOptions opt;
  opt.run_dir = dir.path.string();
  opt.console = false;
  Trainer trainer(model, cfg, source, opt);
  const TrainResult res = trainer.run();
  REQUIRE(res.status == TrainResult::Status::finished);
  CHECK(res.steps == S);
  CHECK(served == S);

  std::vector<json> records;
  {
    std::ifstream in(dir.path / "metrics.jsonl");
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) records.push_back(json::parse(line));
  }
  REQUIRE(records.size() == S);

  // Tolerances. Loss and gradient norm: rtol 1e-5, about 100 float32 epsilons; each step's values carry the
  // float32 error of a forward/backward (~1e-7 relative) plus what 20 steps of float32 updates left in the
  // weights. Learning rate: the same double formula on both sides, stored as float32 in the fixture (6e-8).
  // Final parameters: allclose with rtol 1e-4 and atol 1e-6 (the fixture stores them as float32, which
  // alone is up to 6e-8 relative; 20 float32 steps leave a few 1e-7). Key biases (qkv.bias[C, 2C)) get
  // atol 1e-4 instead, 1e-3 of how far Adam can move a parameter in this run (sum of lr ~ 0.12; Adam steps
  // are ~lr each): softmax ignores a constant added to every logit of a row, so their exact gradient is a
  // near-total cancellation (nothing but the rotation of RoPE's slowest pairs survives), and Adam, dividing
  // each element by its own magnitude, turns float32 round-off in it into steps of a visible size.
  Compare closs, cnorm, clr, cparam, ckey;
  for (std::size_t s = 0; s < S; ++s) {
    const json& r = records[s];
    INFO("metrics record " << s << ": " << r.dump());
    REQUIRE(r.at("split") == "train");
    REQUIRE(r.at("step").get<std::size_t>() == s + 1);
    const std::string at = "step " + std::to_string(s + 1);
    closs.add(r.at("loss").get<double>(), want_loss(s), 1e-5, 0, at);
    cnorm.add(r.at("grad_norm").get<double>(), want_norm(s), 1e-5, 0, at);
    clr.add(r.at("lr").get<double>(), want_lr(s), 1e-6, 0, at);
  }
  const std::size_t C = model.config().d_model;
  for (const auto& p : model.parameters()) {
    REQUIRE(st.floats.count("final." + p.name) == 1);
    const Array& want = st.get_float("final." + p.name);
    const Array& got = p.tensor.value();
    REQUIRE(got.shape() == want.shape());
    const bool qkv_bias = p.name.size() > 13 && p.name.compare(p.name.size() - 13, 13, "attn.qkv.bias") == 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const bool key = qkv_bias && i >= C && i < 2 * C;
      (key ? ckey : cparam).add(got.data()[i], want.data()[i], 1e-4, key ? 1e-4 : 1e-6,
                                p.name + "[" + std::to_string(i) + "]");
    }
  }
  REQUIRE(ckey.worst_abs > 0);  // the key biases were found and compared
  std::printf("parity trainer (%zu steps, %zu clipped) worst error: loss %.2e, grad norm %.2e at %s, final "
              "parameter %.2e at %s, key bias %.2e\n", S, clipped, closs.worst_abs, cnorm.worst_abs,
              cnorm.worst_where.c_str(), cparam.worst_abs, cparam.worst_where.c_str(), ckey.worst_abs);
  std::printf("  tolerance use (1 = at the limit): loss %.2f, grad norm %.2f, lr %.2f, final parameters %.2f at %s, "
              "key biases %.2f at %s\n", closs.worst_ratio, cnorm.worst_ratio, clr.worst_ratio, cparam.worst_ratio,
              cparam.ratio_where.c_str(), ckey.worst_ratio, ckey.ratio_where.c_str());
  check_ok(closs, "loss");
  check_ok(cnorm, "grad norm");
  check_ok(clr, "lr");
  check_ok(cparam, "final parameter");
  check_ok(ckey, "key bias");
}
