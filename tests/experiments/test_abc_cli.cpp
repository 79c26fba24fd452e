// `pelab abc` end to end on a tiny config: both stages and the bias file, the second stage reading it, a
// rerun that changes nothing, and the refusals (a stage 1 that does not interpolate, a grid, a --retrain-set
// of a key the command sets, a bias file it did not write, other biases once stage 2 exists, a layer the
// model lacks), each with a non-zero exit and nothing half-written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_helpers.hpp"
#include "layers/positional/abc_bias.hpp"
#include "tiny_config.hpp"

using namespace pelab;
using namespace pelab::test;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct AbcCase {
  std::string dir, cfg, log;
  explicit AbcCase(const std::string& name) : dir(fresh_temp_dir(name)), cfg(dir + "/tiny.toml"), log(dir + "/log") {
    std::ofstream(cfg) << tiny_config(20);
  }
  int run(const std::string& out, const std::string& extra) const {
    return run_cli("abc " + cfg + " --out " + dir + "/" + out + " --threads 1 --samples 8 " + extra, log, 120);
  }
};

}  // namespace

TEST_CASE("pelab abc: calibrate, write the bias file, retrain reading it, print both", "[abc][cli]") {
  const AbcCase c("abc_cli_run");
  REQUIRE(c.run("out", "--require-interpolation 0") == 0);
  const std::string out = c.dir + "/out", bias = out + "/abc_bias.txt", log = slurp(c.log);
  INFO(log);
  CHECK(fs::exists(out + "/calibrate/eval.json"));
  CHECK(fs::exists(out + "/retrain/eval.json"));
  const AbcBias b = read_abc_bias(bias);
  CHECK(b.heads.size() == 2);  // tiny_config's n_heads
  const std::string retrain = slurp(out + "/retrain/config.toml");
  CHECK(retrain.find("name = \"abc\"") != std::string::npos);
  CHECK(retrain.find(fs::path(bias).lexically_normal().string()) != std::string::npos);
  CHECK(slurp(out + "/calibrate/config.toml").find("name = \"none\"") != std::string::npos);
  CHECK(log.find("stage 2 (abc, retrain)") != std::string::npos);
  CHECK(slurp(bias).find("# from run " + out + "/calibrate") != std::string::npos);

  const std::string before = slurp(bias);  // a rerun: both stages finished, the same bias
  REQUIRE(c.run("out", "--require-interpolation 0") == 0);
  CHECK(slurp(bias) == before);
  CHECK(slurp(c.log).find("already finished") != std::string::npos);

  CHECK(c.run("out", "--require-interpolation 0 --lambda 0") == 2);  // other biases: stage 2 read the old ones
  CHECK(slurp(c.log).find("holds other biases than these settings give") != std::string::npos);
  CHECK(slurp(bias) == before);
  fs::remove_all(c.dir);
}

TEST_CASE("pelab abc refuses what it cannot calibrate, before writing the bias or stage 2", "[abc][cli]") {
  const AbcCase c("abc_cli_refusals");
  // 20 steps of copy are far from exact: the default gate (0.9) stops after stage 1.
  CHECK(c.run("gate", "--require-interpolation 0.95") == 2);
  CHECK(slurp(c.log).find("below --require-interpolation 0.95") != std::string::npos);
  CHECK(fs::exists(c.dir + "/gate/calibrate/eval.json"));
  CHECK_FALSE(fs::exists(c.dir + "/gate/abc_bias.txt"));
  CHECK_FALSE(fs::exists(c.dir + "/gate/retrain"));

  CHECK(c.run("x", "--retrain-set encoding.name=rope") == 2);
  CHECK(slurp(c.log).find("--retrain-set encoding.name=rope: `pelab abc` sets encoding.name") != std::string::npos);
  CHECK(c.run("x", "--retrain-set train.stepz=3") == 2);  // a typo is refused before any training
  CHECK_FALSE(fs::exists(c.dir + "/x"));

  CHECK(c.run("gate", "--require-interpolation 0 --layer 2") == 2);  // tiny_config has one layer
  CHECK(slurp(c.log).find("--layer 2: the model of") != std::string::npos);

  fs::create_directories(c.dir + "/mine");
  std::ofstream(c.dir + "/mine/abc_bias.txt") << "someone's notes\n";
  fs::copy(c.dir + "/gate/calibrate", c.dir + "/mine/calibrate", fs::copy_options::recursive);
  CHECK(c.run("mine", "--require-interpolation 0") == 2);
  CHECK(slurp(c.log).find("exists and is not a bias file `pelab abc` wrote") != std::string::npos);
  CHECK(slurp(c.dir + "/mine/abc_bias.txt") == "someone's notes\n");

  std::ofstream(c.cfg, std::ios::app) << "[sweep]\n\"train.seed\" = [0, 1]\n";
  CHECK(c.run("grid", "") == 2);
  CHECK(slurp(c.log).find("defines a [sweep] grid of 2 cells; `pelab abc` calibrates one run") != std::string::npos);
  fs::remove_all(c.dir);
}
