// `pelab batches` (experiments/run/export_batches.hpp): the exported stream is the one the trainer trains on. A
// model trained by `pelab train` (randomized position ids, so the position stream counts too) and the same model
// trained on the batches read back from the file (ids kept as given) end with bit-identical weights.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "core/safetensors.hpp"
#include "experiments/config/config.hpp"
#include "experiments/run/export_batches.hpp"
#include "experiments/run/run.hpp"
#include "experiments/tasks/task.hpp"
#include "tiny_config.hpp"
#include "training/checkpoint.hpp"
#include "training/trainer.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

// Batch s of the file, its padding cut off.
Batch batch_of(const SafeTensors& st, std::size_t s) {
  const std::size_t B = st.get_int("tokens").shape()[1], Tmax = st.get_int("tokens").shape()[2];
  const std::size_t T = std::size_t(st.get_int("lengths")(s));
  Batch b;
  auto cut = [&](const auto& from, auto& to) {
    to.resize({B, T});
    for (std::size_t r = 0; r < B; ++r)
      std::memcpy(to.data() + r * T, from.data() + (s * B + r) * Tmax, T * sizeof(*to.data()));
  };
  cut(st.get_int("tokens"), b.tokens);
  cut(st.get_int("targets"), b.targets);
  cut(st.get_int("positions"), b.positions);
  cut(st.get_float("mask"), b.mask);
  return b;
}

void initialize(Transformer& m, const RunSpec& spec) {  // as run_experiment does
  Rng irng = init_rng(spec.config.train.seed);
  init_parameters(m, irng, spec.config.model.init_options());
}

bool same(const IndexArray& a, const IndexArray& b) {
  return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("pelab batches writes the stream the trainer trains on", "[export][e2e]") {
  const std::string dir = test::fresh_temp_dir("export_batches");
  std::ofstream(dir + "/tiny.toml") << test::tiny_config(12);
  // RoPE reads the ids (tiny_config's NoPE would not), so a wrong position stream shows in the weights.
  const std::string sets =
      " --set encoding.name=rope --set train.positions=randomized --set train.max_position=64 --set train.seed=3";
  REQUIRE(test::run_cli("batches " + dir + "/tiny.toml --steps 12 --out " + dir + "/b.safetensors" + sets,
                        dir + "/log.txt") == 0);
  REQUIRE(test::run_cli("train " + dir + "/tiny.toml --out " + dir + "/run" + sets, dir + "/log2.txt") == 0);
  const SafeTensors st = load_safetensors(dir + "/b.safetensors");
  CHECK(st.metadata.at("format") == "pelab-batches-1");
  CHECK(st.get_int("tokens").shape()[0] == 12);

  const RunSpec spec = parse_config(test::tiny_config(12), "tiny.toml",
                                    {"encoding.name=rope", "train.positions=randomized", "train.max_position=64",
                                     "train.seed=3"}).runs.at(0);
  Transformer trained(spec.model);
  load_checkpoint(*latest_checkpoint(dir + "/run"), trained, nullptr);

  Transformer replay(spec.model);
  initialize(replay, spec);
  TrainConfig tc = spec.config.train;
  tc.positions = PositionMode::task;  // keep the file's ids
  std::size_t next = 0;
  TrainerOptions to;
  to.run_dir = dir + "/replay";
  to.console = false;
  Trainer trainer(replay, tc, [&](Rng&) { return batch_of(st, next++); }, to);
  REQUIRE(trainer.run().steps == 12);
  const auto a = trained.parameters(), b = replay.parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name);
    const Array &x = a[i].tensor.value(), &y = b[i].tensor.value();
    REQUIRE(x.size() == y.size());
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(real)) == 0);
  }
  // The first batch is training_batches' own; another seed's stream is another.
  CHECK(same(training_batches(spec, 1).front().tokens, batch_of(st, 0).tokens));
  RunSpec other = spec;
  other.config.train.seed = 4;
  CHECK_FALSE(same(training_batches(other, 1).front().tokens, batch_of(st, 0).tokens));
  fs::remove_all(dir);
}
