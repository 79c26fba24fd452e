// End to end, the claim of core/parallel.hpp: `pelab train` at 1 and at 2 threads ends with the same
// weights, optimizer state and losses, bit for bit, for every encoding, and writes the same metrics.jsonl
// but for wall time (held-out evaluations with the lengths beyond training included); and a looped model
// ([loop]) whose loops grow with the length. The model is large
// enough that the plan cuts its GEMMs into pieces (rows 32 x 33, d_model 64: 2 pieces) and its
// elementwise loops.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_helpers.hpp"
#include "core/parallel.hpp"
#include "layers/positional/encoding.hpp"
#include "open_model_features.hpp"

using namespace pelab;
using namespace pelab::test;
namespace fs = std::filesystem;

namespace {

std::string slurp_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// metrics.jsonl without the keys that measure wall time (time, tokens_per_s).
std::string timeless_metrics(const fs::path& run) {
  std::string out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("time");
    j.erase("tokens_per_s");
    out += j.dump() + "\n";
  }
  return out;
}

// The final checkpoint of a run directory.
fs::path last_checkpoint(const fs::path& run) {
  fs::path last;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    if (last.empty() || e.path().filename() > last.filename()) last = e.path();
  return last;
}

std::string config_for(const std::string& encoding) {
  return "[model]\nd_model = 64\nn_layers = 2\nn_heads = 4\n"
         "[encoding]\nname = \"" + encoding + "\"\n"
         "[task]\nname = \"" + std::string(EncodingRegistry::instance().get(encoding).reads_digit_index ? "addition" : "copy") +
         "\"\ntrain_len = 16\n"
         "[train]\nsteps = 30\nbatch_size = 32\nlog_every = 10\neval_every = 10\n"
         "[eval]\nlengths = [16, 24]\nsamples = 16\n";
}

// Trains `config` with `sets` (--set assignments) at 1 and 2 threads (runs under dir/<label>_t1, _t2) and
// checks the bits agree.
void check_threads(const std::string& dir, const std::string& label, const std::string& config,
                   const std::string& sets = "") {
  INFO("run " << label);
  const std::string cfg = dir + "/" + label + ".toml";
  std::ofstream(cfg) << config;
  nlohmann::json eval[2];
  std::string weights[2], optimizer[2], metrics[2];
  for (int t = 1; t <= 2; ++t) {
    const std::string out = dir + "/" + label + "_t" + std::to_string(t);
    const std::string log = out + ".log";
    REQUIRE(run_cli("train " + cfg + sets + " --out " + out + " --threads " + std::to_string(t), log, 300) == 0);
    const fs::path ck = last_checkpoint(out);
    weights[t - 1] = slurp_bytes(ck / "weights.safetensors");
    optimizer[t - 1] = slurp_bytes(ck / "optimizer.safetensors");
    eval[t - 1] = nlohmann::json::parse(slurp_bytes(fs::path(out) / "eval.json"));
    metrics[t - 1] = timeless_metrics(out);
  }
  REQUIRE(!weights[0].empty());
  CHECK(weights[0] == weights[1]);
  CHECK(optimizer[0] == optimizer[1]);
  CHECK(eval[0]["final_train_loss"] == eval[1]["final_train_loss"]);
  CHECK(eval[0]["results"].dump() == eval[1]["results"].dump());
  CHECK(metrics[0].find("\"beyond\":[{") != std::string::npos);  // held-out records at 10 and 20, length 24
  CHECK(metrics[0] == metrics[1]);
}

}  // namespace

TEST_CASE("pelab train at 1 and 2 threads ends with the same bits for every encoding", "[threads][e2e][slow]") {
  if (parallel::hardware_threads() < 2) {
    WARN("one hardware thread: 2 threads cannot be compared here");
    return;
  }
  const std::string dir = fresh_temp_dir("threads_determinism");
  for (const std::string& name : EncodingRegistry::instance().names()) check_threads(dir, name, config_for(name));
  // looped depth growing with T ([loop], issue 47)
  check_threads(dir, "looped_none", config_for("none") + "[loop]\nfirst = 1\nrule = \"length\"\nper_token = 0.125\noffset = 1\n");
  fs::remove_all(dir);
}

// The architecture features of issue 46 on their encodings: QK-norm per layer, Canon at every point, and
// the open models' layouts and attention (tests/open_model_features.hpp).
TEST_CASE("pelab train at 1 and 2 threads ends with the same bits with issue 46's features",
          "[threads][e2e][slow][qk_norm][canon]") {
  if (parallel::hardware_threads() < 2) {
    WARN("one hardware thread: 2 threads cannot be compared here");
    return;
  }
  const std::string dir = fresh_temp_dir("threads_determinism_features");
  check_threads(dir, "rope_qk_norm", config_for("rope") + "[attention]\nqk_norm = \"on,off\"\n");
  check_threads(dir, "none_canon", config_for("none") + "[canon]\npoints = \"ABCD\"\n");
  std::size_t i = 0;
  for (const test::OpenModelFeature& f : test::open_model_features()) {
    INFO("feature " << f.label);
    std::string sets;
    for (const auto& [key, value] : f.sets) sets += " --set '" + key + "=" + value + "'";
    check_threads(dir, "feature" + std::to_string(i++), config_for(f.encoding), sets);
  }
  fs::remove_all(dir);
}
