// End to end through the real CLI: a tiny sweep runs, reports, and resumes by skipping finished cells;
// bad input exits 2 and writes nothing; a small run through the full stack learns.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "experiments/config/config.hpp"
#include "core/parallel.hpp"
#include "experiments/run/run.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"
#include "cli_helpers.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string temp_dir(const std::string& name) { return test::fresh_temp_dir("" + name); }

const std::string kTinySweep = test::tiny_config(40) + "[sweep]\n\"encoding.name\" = [\"rope\", \"none\"]\n\"train.seed\" = [0, 1]\n";

}  // namespace

TEST_CASE("a sweep runs every cell in parallel processes, reports, and a re-run skips finished cells", "[sweep][e2e]") {
  const std::string dir = temp_dir("sweep");
  const std::string cfg = dir + "/tiny.toml";
  std::ofstream(cfg) << kTinySweep;
  const std::string out = dir + "/out";
  REQUIRE(run_cli("sweep " + cfg + " --out " + out + " --jobs 2", dir + "/log1.txt") == 0);
  // In grid order: rope first, the last key varying fastest.
  const std::vector<std::string> cells = {"encoding.name=rope__train.seed=0", "encoding.name=rope__train.seed=1",
                                          "encoding.name=none__train.seed=0", "encoding.name=none__train.seed=1"};
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string& c = cells[i];
    INFO(c << "\n" << read_file(dir + "/log1.txt"));
    REQUIRE(fs::exists(out + "/" + c + "/eval.json"));
    const auto j = nlohmann::json::parse(read_file(out + "/" + c + "/eval.json"));
    CHECK(j.at("results").size() == 3);
    CHECK(j.at("cell") == i);
    CHECK(j.at("assignment").at("encoding.name") == (c.find("rope") != std::string::npos ? "rope" : "none"));
    // The cell ran from its cell file alone, which carries its [cell] table; the run kept it as config.toml.
    const std::string cell_toml = read_file(out + "/" + c + "/cell.toml");
    CHECK(cell_toml.find("\n[cell]\nindex = " + std::to_string(i) + "\n") != std::string::npos);
    CHECK(read_file(out + "/" + c + "/config.toml") == cell_toml);
    // cells x threads = cores: with 2 jobs, each cell gets half of them (at least 1).
    CHECK(cell_toml.find("\nthreads = " + std::to_string(std::max(1, parallel::hardware_threads() / 2)) + "\n") !=
          std::string::npos);
  }
  CHECK(fs::exists(out + "/summary.md"));
  CHECK(fs::exists(out + "/summary.csv"));
  const std::string md = read_file(out + "/summary.md");
  REQUIRE(md.find("| none") != std::string::npos);
  REQUIRE(md.find("| rope") != std::string::npos);
  CHECK(md.find("| rope") < md.find("| none"));  // rows in the grid's order, not the alphabet's

  // Forget one cell's result: a re-run trains only that cell and leaves the others untouched. It runs
  // with another thread count (1 job: all the cores), which the cell's checkpoints do not object to.
  const auto kept = fs::last_write_time(out + "/" + cells[0] + "/eval.json");
  fs::remove(out + "/" + cells[3] + "/eval.json");
  REQUIRE(run_cli("sweep " + cfg + " --out " + out + " --jobs 1", dir + "/log2.txt") == 0);
  const std::string log2 = read_file(dir + "/log2.txt");
  INFO(log2);
  CHECK(log2.find("3 already finished") != std::string::npos);
  CHECK(log2.find("1 at a time, " + std::to_string(parallel::hardware_threads()) + " thread(s) each") !=
        std::string::npos);
  // More threads per cell than the machine has: refused before anything runs.
  CHECK(run_cli("sweep " + cfg + " --out " + out + " --threads " + std::to_string(parallel::hardware_threads() + 1),
                dir + "/log3.txt") == 2);
  CHECK(read_file(dir + "/log3.txt").find("--threads") != std::string::npos);
  CHECK(fs::exists(out + "/" + cells[3] + "/eval.json"));
  CHECK(fs::last_write_time(out + "/" + cells[0] + "/eval.json") == kept);
  fs::remove_all(dir);
}

TEST_CASE("bad config input exits with code 2, says where, and writes nothing", "[cli][errors]") {
  const std::string dir = temp_dir("badcfg");
  const std::string cfg = dir + "/bad.toml";
  std::ofstream(cfg) << "[train]\nlerning_rate = 0.1\n[output]\ndir = \"" << dir << "/never\"\n";
  CHECK(run_cli("train " + cfg, dir + "/log.txt") == 2);
  const std::string log = read_file(dir + "/log.txt");
  CHECK(log.find("bad.toml:2") != std::string::npos);
  CHECK(log.find("lr") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/never"));
  CHECK(run_cli("train " + cfg + " --set model.n_heads=3", dir + "/log.txt") == 2);
  CHECK(run_cli("frobnicate", dir + "/log.txt") != 0);
  CHECK(run_cli("eval " + dir, dir + "/log.txt") == 2);  // no config.toml there
  // an encoding parameter out of its cross-key range, and a position setting
  std::ofstream(cfg) << "[encoding]\nname = \"t5\"\n[encoding.t5]\nnum_buckets = 32\nmax_distance = 12\n[output]\ndir = \""
                     << dir << "/never\"\n";
  CHECK(run_cli("train " + cfg, dir + "/log.txt") == 2);
  CHECK(read_file(dir + "/log.txt").find("bad.toml:5: [encoding.t5] max_distance 12 must be greater than num_buckets/2") !=
        std::string::npos);
  CHECK(run_cli("train " + cfg + " --set encoding.t5.max_distance=128 --set train.positions=shuffled", dir + "/log.txt") == 2);
  CHECK(read_file(dir + "/log.txt").find("--set train.positions=shuffled") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/never"));
  fs::remove_all(dir);
}

TEST_CASE("a seconds-long run through the full stack learns copy", "[e2e][learn]") {
  const std::string dir = temp_dir("learn");
  const RunSpec spec = parse_config(R"(
[model]
d_model = 32
n_layers = 2
n_heads = 2
[encoding]
name = "rope"
[task]
name = "copy"
train_len = 4
[train]
steps = 300
batch_size = 16
lr = 3e-3
warmup = 20
log_every = 50
[eval]
lengths = [4]
samples = 64
)", "learn.toml").runs.at(0);
  RunOptions ro;
  ro.run_dir = dir + "/run";
  ro.console = false;
  REQUIRE(run_experiment(spec, ro) == kOk);
  const auto j = nlohmann::json::parse(read_file(ro.run_dir + "/eval.json"));
  const double loss = j.at("final_train_loss").get<double>();
  const double acc = j.at("results").at(0).at("token_acc").get<double>();
  INFO("final train loss " << loss << ", token accuracy " << acc);
  CHECK(loss < 0.5);   // chance is ln(10) = 2.3
  CHECK(acc > 0.85);
  fs::remove_all(dir);
}
