// `pelab eval RUN --set ... --name NAME` through the real CLI: evaluation-time settings only (others
// refused naming the key, exit 2), eval-NAME.json beside the untouched eval.json, and the report's one
// row per run x named evaluation. Config errors of [attention] and [encoding.rope] scaling with lines.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "experiments/config/config.hpp"
#include "experiments/eval/eval_named.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/report/report.hpp"
#include "training/fs.hpp"
#include "cli_helpers.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string temp_dir(const std::string& name) { return test::fresh_temp_dir("evalnamed_" + name); }

const char* kRope = R"(
[model]
d_model = 16
n_layers = 1
n_heads = 2
[encoding]
name = "rope"
[task]
name = "copy"
train_len = 4
[train]
steps = 10
batch_size = 4
[eval]
lengths = [4, 8]
samples = 8
)";

}  // namespace

TEST_CASE("pelab eval --set/--name: evaluation settings only, each evaluation in its own file, the report shows them",
          "[eval_named][cli]") {
  const std::string dir = temp_dir("cli"), cfg = dir + "/c.toml", run = dir + "/run", log = dir + "/log";
  write_file_atomic(cfg, kRope);
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log) == 0);
  const std::string trained = read_file(run + "/eval.json");

  // refused, naming the key; nothing written
  CHECK(run_cli("eval " + run + " --set train.lr=0.1 --name x", log) == 2);
  CHECK(has(read_file(log), "train.lr"));
  CHECK(run_cli("eval " + run + " --set encoding.name=alibi --name x", log) == 2);
  CHECK(has(read_file(log), "encoding.name"));
  CHECK(run_cli("eval " + run + " --set encoding.alibi.slope_scale=2 --name x", log) == 2);
  CHECK(has(read_file(log), "encoding.alibi.slope_scale"));
  CHECK(run_cli("eval " + run + " --set attention.scaling=learned --name x", log) == 2);
  CHECK(has(read_file(log), "attention.scaling"));
  CHECK(run_cli("eval " + run + " --set encoding.rope.factor=0.5 --name x", log) == 2);
  CHECK(has(read_file(log), "factor"));
  CHECK(run_cli("eval " + run + " --name ../x", log) == 2);
  CHECK(!fs::exists(run + "/eval-x.json"));
  CHECK(run_cli("eval " + run + " --name trained", log) == 2);  // the report's name for eval.json
  CHECK(has(read_file(log), "'trained' is the name the report gives"));

  REQUIRE(run_cli("eval " + run + " --set encoding.rope.scaling=yarn --set encoding.rope.factor=2 --name yarn2", log) == 0);
  REQUIRE(run_cli("eval " + run + " --set attention.scaling=log_length --lengths 8 --name logn", log) == 0);
  CHECK(read_file(run + "/eval.json") == trained);  // never overwritten
  const EvalResult y = read_eval_result(run + "/eval-yarn2.json");
  CHECK(y.eval_name == "yarn2");
  REQUIRE(y.eval_settings.size() == 2);
  CHECK(y.eval_settings[0] == "encoding.rope.scaling=yarn");
  REQUIRE(y.results.size() == 2);
  const EvalResult l = read_eval_result(run + "/eval-logn.json");
  REQUIRE(l.results.size() == 1);
  CHECK(l.results[0].length == 8);
  // yarn changes the model's outputs, so the loss differs from the trained evaluation's
  const EvalResult t = read_eval_result(run + "/eval.json");
  CHECK(*y.results[1].metric("loss") != *t.results[1].metric("loss"));

  ReportOptions ro;
  ro.plots = false;
  const ReportResult r = write_report(run, ro);
  INFO(r.table_markdown);
  CHECK(has(r.table_markdown, "| trained"));
  CHECK(has(r.table_markdown, "| yarn2"));
  CHECK(has(r.table_markdown, "| logn"));
  fs::remove_all(dir);
}

TEST_CASE("[attention] and rope scaling settings: errors with file:line", "[eval_named][config]") {
  CHECK_THROWS_WITH(parse_config(std::string(kRope) + "[attention]\nscaling = \"none\"\ntemperature = 0.5\n", "a.toml"),
                    Catch::Contains("a.toml:19") && Catch::Contains("temperature") && Catch::Contains("fixed"));
  CHECK_THROWS_WITH(parse_config(std::string(kRope) + "[attention]\nscaling = \"hot\"\n", "a.toml"),
                    Catch::Contains("a.toml:18") && Catch::Contains("log_length"));
  CHECK_THROWS_WITH(parse_config(std::string(kRope) + "[attention]\nscaling = \"fixed\"\ntemperature = 0\n", "a.toml"),
                    Catch::Contains("a.toml:19") && Catch::Contains("temperature"));
  CHECK_THROWS_WITH(parse_config(std::string(kRope) + "[encoding.rope]\nscaling = \"yarn\"\nyarn_beta = 0.5\n", "a.toml"),
                    Catch::Contains("a.toml:") && Catch::Contains("yarn_beta"));
  // yarn on a non-RoPE encoding names the key; fine inside a sweep over encoding.name
  CHECK_THROWS_WITH(parse_config(std::string(kRope) + "[encoding.rope]\nscaling = \"yarn\"\n", "a.toml",
                                 {"encoding.name=alibi"}),
                    Catch::Contains("a.toml:18") && Catch::Contains("scaling") && Catch::Contains("alibi"));
  CHECK_NOTHROW(parse_config(std::string(kRope) + "[encoding.rope]\nscaling = \"yarn\"\n[sweep]\n\"encoding.name\" = [\"alibi\", \"rope\"]\n",
                             "a.toml"));
  const LoadedConfig ok = parse_config(std::string(kRope) + "[attention]\nscaling = \"log_length\"\n", "a.toml");
  CHECK(ok.runs.at(0).model.attention.scaling == "log_length");
  CHECK(has(to_toml(ok.runs.at(0).config), "[attention]"));
}

TEST_CASE("a sweep cell re-evaluated with a swept key changed: its [cell] record does not block the evaluation",
          "[eval_named]") {
  const std::string dir = temp_dir("cell");
  write_file_atomic(dir + "/config.toml", std::string(kRope) +
                                              "[cell]\nindex = 0\nlabel = \"attention.scaling=none\"\n"
                                              "[cell.assignment]\n\"attention.scaling\" = \"none\"\n");
  const std::vector<std::string> sets = {"attention.scaling=log_length"};
  // the plain loader refuses the difference with the cell's record...
  CHECK_THROWS_WITH(load_config(dir + "/config.toml", sets), Catch::Contains("cell.assignment"));
  // ...the evaluation loader applies it
  const RunSpec spec = load_eval_config(dir, sets);
  CHECK(spec.model.attention.scaling == "log_length");
  CHECK(spec.config.cell.index == std::optional<std::size_t>(0));  // the rest of [cell] stays
  CHECK(load_eval_config(dir, {}).config.cell.assignment.size() == 1);  // untouched when nothing changes
  fs::remove_all(dir);
}

TEST_CASE("pelab eval recomputes [eval] operand_grid: the same cells as training's, --set changes them, a named "
          "evaluation never carries the training's grid, --json lists the cells with their operand lengths",
          "[eval_named][cli][operand_grid]") {
  const std::string dir = temp_dir("grid"), cfg = dir + "/c.toml", run = dir + "/run", log = dir + "/log";
  write_file_atomic(cfg, "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[encoding]\nname = \"abacus\"\n"
                         "[task]\nname = \"addition\"\ntrain_len = 3\n[task.addition]\noperand_lengths = \"independent\"\n"
                         "reverse_digits = true\n[train]\nsteps = 10\nbatch_size = 4\n"
                         "[eval]\nlengths = [3]\nsamples = 8\noperand_grid = [1, 3]\n");
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log) == 0);
  const EvalResult t = read_eval_result(run + "/eval.json");
  REQUIRE(t.operand_grid.size() == 9);

  REQUIRE(run_cli("eval " + run + " --name same", log) == 0);
  CHECK(has(read_file(log), "rows len_a, columns len_b"));
  const EvalResult same = read_eval_result(run + "/eval-same.json");
  REQUIRE(same.operand_grid.size() == 9);
  for (std::size_t i = 0; i < 9; ++i) {  // the same data and model: the same numbers
    CHECK(*same.operand_grid[i].len_a == *t.operand_grid[i].len_a);
    CHECK(*same.operand_grid[i].len_b == *t.operand_grid[i].len_b);
    CHECK(same.operand_grid[i].metric("loss") == t.operand_grid[i].metric("loss"));
  }

  REQUIRE(run_cli("eval " + run + " --set eval.operand_grid=[2,3] --name small", log) == 0);
  const EvalResult small = read_eval_result(run + "/eval-small.json");
  REQUIRE(small.operand_grid.size() == 4);
  CHECK(*small.operand_grid[0].len_a == 2);
  CHECK(small.operand_grid[3].metric("loss") == t.operand_grid[8].metric("loss"));  // (3, 3)

  REQUIRE(run_cli("eval " + run + " --set eval.operand_grid=[] --name none", log) == 0);
  CHECK(read_eval_result(run + "/eval-none.json").operand_grid.empty());  // not the training's 9 cells

  REQUIRE(run_cli("eval " + run + " --set eval.operand_grid=[1,2] --json " + dir + "/out.json", log) == 0);
  const auto j = nlohmann::json::parse(read_file(dir + "/out.json"));
  REQUIRE(j.size() == 1 + 4);  // length 3, then the four cells
  CHECK(!j[0].contains("len_a"));
  CHECK(j[4]["len_a"] == 2);
  CHECK(j[4]["len_b"] == 2);
  fs::remove_all(dir);
}
