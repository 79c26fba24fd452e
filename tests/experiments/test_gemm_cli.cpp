// The GEMM path through the real binary: a run records it, `pelab eval` computes on it (also for a run
// directory written before [train] gemm existed), and a sweep refuses a PELAB_GEMM that disagrees with
// its cells before it writes anything.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_helpers.hpp"
#include "core/blas.hpp"
#include "tiny_config.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

// Each length's held-out loss of an eval.json (or eval-NAME.json), in order.
std::vector<double> losses(const nlohmann::json& j) {
  std::vector<double> out;
  for (const auto& r : j.at("results")) out.push_back(r.at("loss").get<double>());
  return out;
}

// Trains the tiny config on `path` into dir/run_PATH and evaluates it again; checks both name the path and
// that the evaluation's losses are the training's final ones, bit for bit (the other path's would differ).
void train_and_eval_on(const std::string& dir, const std::string& path, const std::string& name) {
  const std::string cfg = dir + "/tiny.toml", run = dir + "/run_" + path;
  std::ofstream(cfg) << test::tiny_config(6);
  REQUIRE(test::run_cli("train " + cfg + " --set train.gemm=" + path + " --out " + run + " --quiet", dir + "/t.log") == 0);
  CHECK(test::has(read_text(run + "/config.toml"), "gemm = \"" + path + "\""));
  const nlohmann::json trained = read_json(run + "/eval.json");
  CHECK(trained.at("provenance").at("gemm").get<std::string>().rfind(name, 0) == 0);
  CHECK(test::has(read_text(run + "/train.log"), "GEMMs by " + name));
  REQUIRE(test::run_cli("eval " + run + " --name again", dir + "/e.log") == 0);
  const nlohmann::json again = read_json(run + "/eval-again.json");
  CHECK(again.at("provenance").at("gemm").get<std::string>().rfind(name, 0) == 0);
  CHECK(losses(again) == losses(trained));
}

}  // namespace

TEST_CASE("pelab train records the GEMM path and pelab eval computes on it, also for a run from before the key",
          "[gemm][cli]") {
  const std::string dir = test::fresh_temp_dir("gemm_cli");
  test::ScopedEnv env("PELAB_GEMM", nullptr);
  train_and_eval_on(dir, "openblas", "OpenBLAS");
  // A run directory written before [train] gemm existed: its config.toml lacks the key, and it was OpenBLAS's.
  const std::string run = dir + "/run_openblas", cfg = read_text(run + "/config.toml");
  const auto at = cfg.find("gemm = ");
  REQUIRE(at != std::string::npos);
  std::ofstream(run + "/config.toml") << cfg.substr(0, at) + cfg.substr(cfg.find('\n', at) + 1);
  REQUIRE(test::run_cli("eval " + run + " --name old", dir + "/old.log") == 0);
  const nlohmann::json old = read_json(run + "/eval-old.json");
  CHECK(old.at("provenance").at("gemm") == "OpenBLAS");
  CHECK(losses(old) == losses(read_json(run + "/eval.json")));
  if (blas::gemm_path_available(blas::GemmPath::libxsmm)) train_and_eval_on(dir, "libxsmm", "libxsmm");
  fs::remove_all(dir);
}

TEST_CASE("a sweep refuses a PELAB_GEMM that disagrees with its cells before it writes anything", "[gemm][cli]") {
  if (!blas::gemm_path_available(blas::GemmPath::libxsmm)) return;  // PELAB_GEMM=libxsmm is itself an error then
  const std::string dir = test::fresh_temp_dir("gemm_sweep"), cfg = dir + "/s.toml", out = dir + "/out";
  std::string text = test::tiny_config(4);
  text.insert(text.find("[eval]"), "gemm = \"openblas\"\n");  // in [train]
  std::ofstream(cfg) << text << "[sweep]\n\"train.seed\" = [0, 1]\n";
  test::ScopedEnv env("PELAB_GEMM", "libxsmm");
  CHECK(test::run_cli("sweep " + cfg + " --out " + out, dir + "/s.log") != 0);
  const std::string log = read_text(dir + "/s.log");
  CHECK(test::has(log, "PELAB_GEMM = 'libxsmm'"));
  CHECK(test::has(log, "s.toml"));
  CHECK_FALSE(fs::exists(out));
  fs::remove_all(dir);
}
