// Budget policies ([train] budget, training/train_config.hpp): the plateau rule, the gate's one definition
// (the C++ default against pelab.reproduce's), the config's refusals, and "competent" end to end: it stops
// on the validation split's value and records the steps used (eval.json, validation.json).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "experiments/config/config.hpp"
#include "experiments/run/run.hpp"
#include "experiments/run/validation.hpp"
#include "experiments/tasks/task.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"
#include "training/eval_observer.hpp"
#include "training/trainer.hpp"
#include "test_paths.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("pelab_test_budget_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

RunSpec tiny(const std::vector<std::string>& overrides) {
  return parse_config(test::tiny_config(200), "tiny.toml", overrides).runs.at(0);
}

nlohmann::json run_json(const RunSpec& spec, const std::string& dir, const std::string& file) {
  RunOptions ro;
  ro.run_dir = dir;
  ro.console = false;
  REQUIRE(run_experiment(spec, ro) == kOk);
  return nlohmann::json::parse(read_file(dir + "/" + file));
}

}  // namespace

TEST_CASE("plateaued: no improvement > eps over the last k evaluations, after more than k of them", "[budget]") {
  CHECK(plateaued({0.5, 0.9, 0.905, 0.9, 0.902}, 3, 0.01, false));   // the header's example
  CHECK_FALSE(plateaued({0.5, 0.9, 0.92, 0.9, 0.9}, 3, 0.01, false));  // +0.02 inside the last 3
  CHECK_FALSE(plateaued({0.9, 0.9, 0.9}, 3, 0.01, false));             // k evaluations are not enough
  CHECK(plateaued({0.9, 0.9, 0.9, 0.9}, 3, 0.0, false));               // flat, eps 0
  CHECK(plateaued({0.9, 0.95, 0.5, 0.5}, 2, 0.0, false));              // a fall is no improvement
  CHECK(plateaued({2.0, 1.0, 0.995, 1.0}, 2, 0.01, true));             // a loss: lower is better
  CHECK_FALSE(plateaued({2.0, 1.0, 0.9, 1.0}, 2, 0.01, true));
  CHECK_FALSE(plateaued({1.0, 1.0}, 0, 1.0, false));                   // k 0: never
}

TEST_CASE("the competence gate has one definition: [train] gate's default is pelab.reproduce's GATE_FRACTION",
          "[budget]") {
  const std::string py = read_file(std::string(PELAB_SOURCE_DIR) + "/python/pelab/reproduce/common.py");
  std::smatch m;
  REQUIRE(std::regex_search(py, m, std::regex("\\nGATE_FRACTION = ([0-9.]+)")));
  CHECK(std::stod(m[1].str()) == TrainConfig{}.gate);
  // The threshold on a task with a chance level: chance + gate x (1 - chance), as common.gate_threshold.
  const RunSpec s = tiny({"train.early_stop_metric=token_acc", "train.budget=competent", "train.eval_every=10"});
  const double c = s.task->chance(4)->token_acc;
  CHECK(*gate_threshold(s.config, *s.task) == Approx(c + 0.8 * (1 - c)));
  CHECK_FALSE(gate_threshold(tiny({"train.early_stop_metric=loss"}).config, *s.task));  // no chance: the target
}

TEST_CASE("budget: competent needs early_stop_metric and evaluations, fixed refuses one, errors say where",
          "[budget][config]") {
  CHECK_THROWS_WITH(tiny({"train.budget=competent", "train.eval_every=10"}),
                    Catch::Contains("--set train.budget=competent") && Catch::Contains("needs early_stop_metric"));
  CHECK_THROWS_WITH(tiny({"train.budget=competent", "train.early_stop_metric=loss"}),
                    Catch::Contains("eval_every = 0"));
  CHECK_THROWS_WITH(tiny({"train.budget=fixed", "train.early_stop_metric=loss"}),
                    Catch::Contains("would do nothing"));
  CHECK_THROWS_WITH(tiny({"train.budget=until_done"}), Catch::Contains("first_fit") && Catch::Contains("competent"));
  CHECK_NOTHROW(tiny({"train.budget=fixed"}));
}

TEST_CASE("budget competent stops on the validation split once the gate is passed and the metric plateaued",
          "[budget][e2e]") {
  // loss has no chance level: the gate is early_stop_target (100: passed at once); eps 1e9 and k 1 make the
  // second evaluation a plateau, so the run stops at step 20 of a cap of 200.
  const std::vector<std::string> base = {"train.eval_every=10", "train.early_stop_metric=loss",
                                         "train.early_stop_target=100", "train.budget=competent",
                                         "train.plateau_evals=1", "train.plateau_eps=1e9"};
  const std::string dir = temp_dir("stop");
  const auto ev = run_json(tiny(base), dir, "eval.json");
  CHECK(ev.at("steps") == 20);
  CHECK(ev.at("status") == "early_stopped");
  const auto val = nlohmann::json::parse(read_file(dir + "/validation.json"));
  CHECK(val.at("steps") == 20);
  CHECK(val.at("split") == "validation");
  CHECK(val.at("length") == 4);
  CHECK(val.at("metric") == "token_acc");  // [protocol] metric "": the headline metric of a sequence task
  CHECK(val.at("budget") == "competent");
  const std::string log = read_file(dir + "/metrics.jsonl");
  CHECK(log.find("\"split\":\"validation\"") != std::string::npos);
  REQUIRE(read_validation(dir));
  CHECK(read_validation(dir)->steps == 20);

  // A gate that is not passed: the run goes to the cap.
  std::vector<std::string> strict = base;
  strict[2] = "train.early_stop_target=1e-6";
  const std::string dir2 = temp_dir("cap");
  const auto ev2 = run_json(tiny(strict), dir2, "eval.json");
  CHECK(ev2.at("steps") == 200);
  CHECK(ev2.at("status") == "finished");
  fs::remove_all(dir);
  fs::remove_all(dir2);
}

TEST_CASE("budget competent: the plateau's evaluations survive a resume", "[budget][e2e]") {
  // k 2: a plateau needs 3 evaluations, so an uninterrupted run stops at step 30. Stopped at 20 (by the on_eval
  // observer, eval_observer.hpp) and resumed, it must stop at 30 too: without the checkpointed values it would
  // start counting again and stop at 50.
  const std::vector<std::string> cfg = {"train.eval_every=10", "train.early_stop_metric=loss",
                                        "train.early_stop_target=100", "train.budget=competent",
                                        "train.plateau_evals=2", "train.plateau_eps=1e9"};
  const std::string whole = temp_dir("whole");
  CHECK(run_json(tiny(cfg), whole, "eval.json").at("steps") == 30);
  const std::string dir = temp_dir("resumed");
  eval_observer().on_eval = [](std::size_t step, const std::string&) { return step == 20; };
  const auto first = run_json(tiny(cfg), dir, "eval.json");
  eval_observer().on_eval = nullptr;
  REQUIRE(first.at("steps") == 20);
  fs::remove(dir + "/eval.json");
  RunOptions ro;
  ro.run_dir = dir;
  ro.console = false;
  ro.resume = true;
  REQUIRE(run_experiment(tiny(cfg), ro) == kOk);
  CHECK(nlohmann::json::parse(read_file(dir + "/eval.json")).at("steps") == 30);
  fs::remove_all(whole);
  fs::remove_all(dir);
}
