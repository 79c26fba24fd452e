// Adding a metric or an optimizer is one file: token_err.cpp and signum.cpp beside this test register
// one each, and nothing else names them. They must show up everywhere the built-ins do: computed by
// evaluation and in training records, listed (metric_names, `pelab list`), accepted by the config
// (early_stop_metric, [train.signum]), stopping a run early, built by name, and their state saved and
// restored through checkpoints so that a resumed run continues bit for bit.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/run/run.hpp"
#include "tests/experiments/tiny_config.hpp"
#include "training/checkpoint.hpp"
#include "training/metrics_table.hpp"
#include "training/optimizer_registry.hpp"

using namespace pelab;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("pelab_test_plugins_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<nlohmann::ordered_json> jsonl(const fs::path& p) {  // keys in file order
  std::vector<nlohmann::ordered_json> lines;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::ordered_json::parse(line));
  return lines;
}

// What `pelab list` prints (experiments/cli/list.cpp, compiled into this test), through a temporary file.
std::string pelab_list() {
  CLI::App app;
  cli::Commands commands;
  cli::add_list(app, commands);
  std::fflush(stdout);
  std::FILE* tmp = std::tmpfile();
  const int saved = ::dup(::fileno(stdout));
  ::dup2(::fileno(tmp), ::fileno(stdout));
  const int rc = commands.at(0).run(cli::Invocation{});
  std::fflush(stdout);
  ::dup2(saved, ::fileno(stdout));
  ::close(saved);
  REQUIRE(rc == 0);
  std::string out;
  std::rewind(tmp);
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += char(c);
  std::fclose(tmp);
  return out;
}

// A module with two parameters, one decaying.
class Tiny : public Module {
 public:
  Tiny() {
    add_parameter("w", {3, 4}, ParamKind::weight);
    add_parameter("b", {4}, ParamKind::bias);
  }
};

void random_grads(const Module& m, Rng& rng) {
  for (const auto& p : m.parameters()) {
    Array& g = grad_buffer(*p.tensor.impl());
    for (std::size_t i = 0; i < g.size(); ++i) g.data()[i] = real(rng.normal());
  }
}

}  // namespace

TEST_CASE("a metric file adds the metric to the table, in its place") {
  CHECK(metric_names() == std::vector<std::string>{"loss", "token_acc", "token_err", "exact_match"});
  const MetricSpec& m = find_metric("token_err");
  CHECK(m.title == "token error rate (%)");
  CHECK(m.lower_is_better);
  CHECK(m.percent);
  CHECK(m.for_lm);
  CHECK(reaches(m, 0.1, 0.2));
  CHECK_FALSE(reaches(m, 0.3, 0.2));
  CHECK_THROWS_WITH(find_metric("token_er"), Contains("did you mean 'token_err'"));
  // It claims no table of its own: the headlines stay.
  CHECK(headline_metric(false, true).name == "token_acc");
  CHECK(headline_metric(true, false).name == "loss");

  const TokenStats s{2.0, 8, 6, 4, 1};  // loss_sum, counted, correct, rows, rows_exact
  CHECK(compute_metrics(s, false).at("token_err") == 0.25);
  CHECK(compute_metrics(s, true).at("token_err") == 0.25);
  const MetricValues train = compute_training_metrics(s, 1.5);
  CHECK(train.at("token_err") == 0.25);
  CHECK(train.at("loss") == 1.5);  // the mean step loss, not loss_sum / counted

  MetricRecord r;
  r.step = 3;
  r.metrics = train;
  const std::string line = to_json_line(r);
  CHECK_THAT(line, Contains("\"token_acc\":0.75,\"token_err\":0.25,\"exact_match\":0.25"));
}

TEST_CASE("an optimizer file adds the optimizer to the registry, built by name with its parameters") {
  const auto names = OptimizerRegistry::instance().names();
  CHECK(names == std::vector<std::string>{"adamw", "sgd", "signum"});
  CHECK(OptimizerRegistry::instance().get("signum").params.at(0).key == "beta");
  Tiny m;
  CHECK(make_optimizer("signum", {{"beta", Value(0.5)}}, OptimizerCommon{}, m.parameters())->kind() ==
        std::string("signum"));
  CHECK_THROWS_WITH(make_optimizer("signum", {{"beta", Value(1.0)}}, OptimizerCommon{}, m.parameters()),
                    Contains("'beta'") && Contains("[0, 1)"));
  CHECK_THROWS_WITH(make_optimizer("signun", {}, OptimizerCommon{}, m.parameters()),
                    Contains("did you mean 'signum'"));
}

TEST_CASE("pelab list shows the plugin metric and optimizer") {
  const std::string out = pelab_list();
  CHECK_THAT(out, Contains("\n  signum       sign of momentum (a test plugin)\n      beta "));
  CHECK_THAT(out, Contains("\n  token_acc    token accuracy (%); higher is better\n"
                           "  token_err    token error rate (%); lower is better\n"
                           "  exact_match  exact match (%); higher is better; sequence tasks only\n"));
}

TEST_CASE("the config accepts the plugin metric for early stopping and the plugin optimizer's subtable") {
  const LoadedConfig c = parse_config(test::tiny_config(8) + "[train.signum]\nbeta = 0.5\n", "plugins.toml",
                                      {"train.optimizer=signum", "train.early_stop_metric=token_err"});
  CHECK(c.config.train.optimizer == "signum");
  CHECK(c.config.train.optimizer_params.at("signum").at("beta") == Value(0.5));
  CHECK(c.config.train.early_stop_metric == "token_err");
  CHECK_THROWS_WITH(parse_config(test::tiny_config(8) + "[train.signum]\nbeta = 1.5\n", "plugins.toml"),
                    Contains("'beta'"));
}

TEST_CASE("the plugin optimizer's state round trips through a checkpoint and continues identically") {
  TempDir dir;
  Tiny a, b;
  for (Module* m : {static_cast<Module*>(&a), static_cast<Module*>(&b)})
    for (auto& p : m->parameters()) {
      real* d = p.tensor.mutable_data();
      for (std::size_t i = 0; i < p.tensor.numel(); ++i) d[i] = real(0.1 * double(i) - 0.3);
    }
  OptimizerCommon common;
  common.weight_decay = 0.1;
  auto opt_a = make_optimizer("signum", {{"beta", Value(0.5)}}, common, a.parameters());
  auto opt_b = make_optimizer("signum", {{"beta", Value(0.5)}}, common, b.parameters());
  Rng ga(7);
  for (int s = 0; s < 3; ++s) {
    random_grads(a, ga);
    opt_a->step(1e-2);
  }
  const std::string path = save_checkpoint(dir.path.string(), a, *opt_a, CheckpointState{3, {}}, 0);
  const SafeTensors st = load_safetensors(path + "/optimizer.safetensors");
  CHECK(st.metadata.at("optimizer") == "signum");
  CHECK(st.metadata.at("signum.steps") == "3");
  CHECK(st.floats.count("signum.buf.w") == 1);
  CHECK(st.floats.count("signum.buf.b") == 1);

  load_checkpoint(path, b, opt_b.get());
  CHECK(opt_b->steps() == 3);
  Rng g1(9), g2(9);
  for (int s = 0; s < 3; ++s) {
    random_grads(a, g1);
    random_grads(b, g2);
    opt_a->step(1e-2);
    opt_b->step(1e-2);
  }
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    const Array& va = a.parameters()[i].tensor.value();
    const Array& vb = b.parameters()[i].tensor.value();
    REQUIRE(va.size() == vb.size());
    CHECK(std::memcmp(va.data(), vb.data(), va.size() * sizeof(real)) == 0);
  }
  auto adamw = make_optimizer("adamw", {}, common, b.parameters());
  CHECK_THROWS_WITH(load_checkpoint(path, b, adamw.get()), Contains("'signum'"));
}

TEST_CASE("a run trains with the plugin optimizer, records the plugin metric and resumes bit for bit") {
  TempDir dir;
  const RunSpec spec = parse_config(test::tiny_config(8) + "[train.signum]\nbeta = 0.5\n", "plugins.toml",
                                    {"train.optimizer=signum", "train.lr=1e-2", "train.checkpoint_every=4",
                                     "train.keep_checkpoints=5"})
                           .runs.at(0);
  RunOptions opt;
  opt.run_dir = dir.path.string();
  opt.console = false;
  REQUIRE(run_experiment(spec, opt) == kOk);

  // metrics.jsonl: training records and evaluations carry the plugin metric in its place.
  for (const auto& j : jsonl(dir.path / "metrics.jsonl")) {
    INFO(j.dump());
    REQUIRE(j.contains("token_err"));
    CHECK(j.at("token_err").is_number());
    std::vector<std::string> keys;
    for (const auto& item : j.items()) keys.push_back(item.key());
    const auto at = std::find(keys.begin(), keys.end(), "token_err");
    CHECK(*(at - 1) == "token_acc");
    CHECK(*(at + 1) == "exact_match");
  }
  // eval.json: every length evaluated reports it, as 1 - token accuracy.
  const EvalResult er = read_eval_result((dir.path / "eval.json").string());
  REQUIRE(!er.results.empty());
  for (const auto& r : er.results)
    if (r.ok) CHECK(r.metrics.at("token_err") == Approx(1.0 - r.metrics.at("token_acc")).margin(1e-12));

  // The checkpoints hold signum's state; resuming from step 4 reproduces step 8 bit for bit.
  const fs::path ck8 = dir.path / "checkpoints" / checkpoint_name(8);
  const SafeTensors st = load_safetensors((ck8 / "optimizer.safetensors").string());
  CHECK(st.metadata.at("optimizer") == "signum");
  const std::string weights = slurp(ck8 / "weights.safetensors"), state = slurp(ck8 / "optimizer.safetensors");
  fs::remove_all(ck8);
  fs::remove(dir.path / "eval.json");
  REQUIRE(run_experiment(spec, opt) == kOk);
  CHECK(slurp(ck8 / "weights.safetensors") == weights);
  CHECK(slurp(ck8 / "optimizer.safetensors") == state);
}

TEST_CASE("a run stops early on the plugin metric") {
  TempDir dir;
  // An error rate of at most 100% is reached at the first evaluation (lower is better).
  const RunSpec spec = parse_config(test::tiny_config(8), "plugins.toml",
                                    {"train.eval_every=2", "train.early_stop_metric=token_err",
                                     "train.early_stop_target=1.0"})
                           .runs.at(0);
  RunOptions opt;
  opt.run_dir = dir.path.string();
  opt.console = false;
  REQUIRE(run_experiment(spec, opt) == kOk);
  const EvalResult er = read_eval_result((dir.path / "eval.json").string());
  CHECK(er.status == "early_stopped");
  CHECK(er.steps == 2);
}
