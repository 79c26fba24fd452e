// [protocol] select (experiments/run/selection.hpp): the config's refusals, the rule on validation values
// written by hand (best mean over seeds per group, a tie to the first in grid order, a value with a missing run
// never chosen, lower is better for a loss), and a tiny real sweep that writes selection.csv.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "experiments/config/config.hpp"
#include "experiments/run/selection.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

const std::string kGrid = test::tiny_config(20) +
                          "[sweep]\n\"encoding.name\" = [\"rope\", \"none\"]\n\"train.lr\" = [1e-3, 3e-3]\n"
                          "\"train.seed\" = [0, 1]\n";

void write_validation(const std::string& dir, const char* metric, double value) {
  fs::create_directories(dir);
  std::ofstream(dir + "/validation.json") << "{\"metric\": \"" << metric << "\", \"value\": " << value
                                          << ", \"steps\": 20, \"status\": \"finished\"}\n";
}

}  // namespace

TEST_CASE("[protocol] select names swept keys, never the seed, and needs a grid", "[protocol][config]") {
  CHECK_THROWS_WITH(parse_config(test::tiny_config(20), "t.toml", {"protocol.select=train.lr"}),
                    Catch::Contains("--set protocol.select") && Catch::Contains("has no [sweep] grid"));
  CHECK_THROWS_WITH(parse_config(kGrid, "t.toml", {"protocol.select=train.warmup"}),
                    Catch::Contains("does not sweep") && Catch::Contains("train.lr"));
  CHECK_THROWS_WITH(parse_config(kGrid, "t.toml", {"protocol.select=train.seed"}),
                    Catch::Contains("aggregates over seeds"));
  CHECK_THROWS_WITH(parse_config(kGrid, "t.toml", {"protocol.metric=accuracy"}), Catch::Contains("exact_match"));
  const LoadedConfig ok = parse_config(kGrid, "t.toml", {"protocol.select= train.lr ,encoding.name"});
  CHECK(selected_keys(ok.config) == std::vector<std::string>{"train.lr", "encoding.name"});
  CHECK(selected_keys(ok.runs.at(0).config) == std::vector<std::string>{"train.lr", "encoding.name"});
}

TEST_CASE("selection: per group the best validation mean over seeds, ties to the first, missing never chosen",
          "[protocol]") {
  const LoadedConfig cfg = parse_config(kGrid, "t.toml", {"protocol.select=train.lr"});
  const std::string root = test::fresh_temp_dir("selection");
  // rope: lr 1e-3 seeds 0.8, 0.9 (mean 0.85) against 3e-3 0.95, 0.7 (0.825): 1e-3.
  // none: 1e-3 0.5, 0.5 against 3e-3 0.5, 0.5: a tie, so the first (1e-3); then 3e-3 improves but lacks seed 1.
  const double v[8] = {0.8, 0.9, 0.95, 0.7, 0.5, 0.5, 0.5, 0.5};
  for (std::size_t i = 0; i < cfg.runs.size(); ++i) write_validation(root + "/" + cfg.runs[i].dir_name, "exact_match", v[i]);
  auto rows = select_settings(cfg.runs, root, {"train.lr"});
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].group == "encoding.name=rope");
  CHECK(rows[0].choice == "train.lr=0.001");
  CHECK(rows[0].mean == Approx(0.85));
  CHECK(rows[0].seeds == 2);
  CHECK(rows[0].selected);
  CHECK_FALSE(rows[1].selected);
  CHECK(rows[2].selected);  // the tie: the first in grid order
  CHECK_FALSE(rows[3].selected);
  // none, 3e-3: a better seed 0 but no record for seed 1: listed as missing, never chosen.
  write_validation(root + "/" + cfg.runs[6].dir_name, "exact_match", 0.99);
  fs::remove(root + "/" + cfg.runs[7].dir_name + "/validation.json");
  rows = select_settings(cfg.runs, root, {"train.lr"});
  CHECK(rows[3].missing == 1);
  CHECK(rows[2].selected);
  CHECK_FALSE(rows[3].selected);
  // A loss: the lowest mean wins (rope: 3e-3 at 0.825 below 1e-3's 0.85).
  for (std::size_t i = 0; i < 4; ++i) write_validation(root + "/" + cfg.runs[i].dir_name, "loss", v[i]);
  rows = select_settings(cfg.runs, root, {"train.lr"});
  CHECK(rows[1].selected);
  CHECK_FALSE(rows[0].selected);
  const std::string csv = selection_csv(rows);
  CHECK(csv.rfind("group,choice,metric,seeds,missing,validation_mean,validation_sd,steps_mean,selected\n", 0) == 0);
  CHECK(csv.find("\"encoding.name=rope\",\"train.lr=0.003\",loss,2,0,0.82499999999999996,") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("a sweep with [protocol] select writes selection.csv from its cells' validation.json", "[protocol][e2e]") {
  const std::string dir = test::fresh_temp_dir("selection_sweep");
  std::ofstream(dir + "/grid.toml") << test::tiny_config(20)
                                    << "[sweep]\n\"train.lr\" = [1e-3, 3e-3]\n\"train.seed\" = [0, 1]\n"
                                       "[protocol]\nselect = \"train.lr\"\n";
  REQUIRE(test::run_cli("sweep " + dir + "/grid.toml --out " + dir + "/out --jobs 2", dir + "/log.txt") == 0);
  INFO(read_file(dir + "/log.txt"));
  const std::string csv = read_file(dir + "/out/selection.csv");
  CHECK(csv.find(",\"train.lr=0.001\",token_acc,2,0,") != std::string::npos);
  CHECK(csv.find(",\"train.lr=0.003\",token_acc,2,0,") != std::string::npos);
  CHECK((csv.find(",true\n") != std::string::npos));
  CHECK(read_file(dir + "/log.txt").find("selection on the validation split") != std::string::npos);
  CHECK(fs::exists(dir + "/out/train.lr=0.001__train.seed=0/validation.json"));
  fs::remove_all(dir);
}
