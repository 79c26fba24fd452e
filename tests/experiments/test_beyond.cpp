// [eval] beyond_samples: the eval lengths above train_len at every held-out evaluation during training,
// in metrics.jsonl's "beyond": the setting and its errors, which lengths, the records of a real run, that
// training is the same with it off, and that a resumed run writes the same records as a straight one.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/run/run.hpp"
#include "tiny_config.hpp"
#include "training/checkpoint.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<nlohmann::json> jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// metrics.jsonl without what measures wall time: the rest must be bit-identical between runs.
std::string timeless(const fs::path& p) {
  std::string out;
  for (nlohmann::json j : jsonl(p)) {
    j.erase("time");
    j.erase("tokens_per_s");
    out += j.dump() + "\n";
  }
  return out;
}

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("pelab_test_beyond_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

// copy at train_len 4, evaluated at 2, 4, 8 on 16 examples; held-out evaluations every 10 of 40 steps.
RunSpec tiny_spec(const std::vector<std::string>& overrides = {}) {
  std::vector<std::string> o = {"train.eval_every=10"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  return parse_config(tiny_config(40), "tiny.toml", o).runs.at(0);
}

int run_quietly(const RunSpec& spec, const std::string& dir) {
  RunOptions ro;
  ro.run_dir = dir;
  ro.console = false;
  return run_experiment(spec, ro);
}

}  // namespace

TEST_CASE("beyond_samples: default 64, at most samples, 0 turns it off, bad values say what is allowed",
          "[config][beyond]") {
  const LoadedConfig d = parse_config("", "x.toml");
  CHECK(d.runs.at(0).config.eval.beyond_samples == 64);
  CHECK_THAT(to_toml(d.runs.at(0).config), Contains("\nbeyond_samples = 64\n"));
  // Above samples it resolves to samples, which config.toml records, so that the recorded file reads back
  // and still loads when `pelab eval RUN --samples 8` lowers samples.
  for (const char* given : {"", "beyond_samples = 100\n"}) {
    INFO(given);
    const LoadedConfig small = parse_config(std::string("[eval]\nsamples = 16\n") + given, "x.toml");
    CHECK(small.runs.at(0).config.eval.beyond_samples == 16);
    const std::string recorded = to_toml(small.runs.at(0).config);
    CHECK_THAT(recorded, Contains("\nbeyond_samples = 16\n"));
    CHECK(parse_config(recorded, "config.toml").runs.at(0).config.eval.beyond_samples == 16);
    CHECK(parse_config(recorded, "config.toml", {"eval.samples=8"}).runs.at(0).config.eval.beyond_samples == 8);
  }
  CHECK(parse_config("[eval]\nbeyond_samples = 0\n", "x.toml").runs.at(0).config.eval.beyond_samples == 0);
  CHECK(parse_config("[eval]\nbeyond_samples = 16\n", "x.toml").runs.at(0).config.eval.beyond_samples == 16);
  CHECK_THAT(config_error("[eval]\nbeyond_samples = -1\n", "x.toml"),
             StartsWith("x.toml:2: [eval] key 'beyond_samples' has value -1; expected an integer in [0, "));
  CHECK_THAT(config_error("[eval]\n\nbeyond_samples = 2.5\n", "x.toml"),
             StartsWith("x.toml:3: [eval] key 'beyond_samples' has value 2.5; expected an integer"));
  CHECK_THAT(config_error("[eval]\nbeyond_samples = \"all\"\n", "x.toml"),
             StartsWith("x.toml:2: [eval] key 'beyond_samples' has value \"all\"; expected an integer"));
  CHECK_THAT(config_error("[eval]\n", "x.toml", {"eval.beyond_samples=-3"}),
             StartsWith("--set eval.beyond_samples=-3: [eval] key 'beyond_samples' has value -3"));
  CHECK_THAT(config_error("[eval]\nbeyond_sample = 8\n", "x.toml"), Contains("did you mean"));
}

TEST_CASE("beyond_lengths: the eval lengths above train_len, at most 8 spread over a range", "[config][beyond]") {
  ExperimentConfig c;
  c.train_len = 16;
  c.eval.lengths = {64, 8, 16, 24, 32, 48};
  CHECK(beyond_lengths(c) == std::vector<std::size_t>{24, 32, 48, 64});
  c.eval.beyond_samples = 0;
  CHECK(beyond_lengths(c).empty());
  c.eval.beyond_samples = 64;
  c.eval.lengths = {4, 8, 16};
  CHECK(beyond_lengths(c).empty());
  // Delétang et al.'s 1..500 after training on 1..40: 460 lengths above, 8 of them tracked.
  const RunSpec r = parse_config("[task]\nname = \"copy\"\ntrain_len = 40\n[eval]\nlength_range = [1, 500]\n", "x.toml")
                        .runs.at(0);
  CHECK(beyond_lengths(r.config) == std::vector<std::size_t>{41, 107, 172, 238, 303, 369, 434, 500});
  c.train_len = 1;
  c.eval.lengths = {2, 3, 4, 5, 6, 7, 8, 9, 10};  // 9 above: one is left out
  CHECK(beyond_lengths(c) == std::vector<std::size_t>{2, 3, 4, 5, 7, 8, 9, 10});
}

TEST_CASE("held-out records carry the lengths beyond training, training lines and the final ones do not",
          "[e2e][beyond]") {
  const std::string dir = temp_dir("records");
  REQUIRE(run_quietly(tiny_spec(), dir) == 0);
  int held_out = 0;
  for (const nlohmann::json& j : jsonl(fs::path(dir) / "metrics.jsonl")) {
    INFO(j.dump());
    const bool periodic = j["split"] == "eval" && j["length"] == 4 && j["step"] < 40;
    CHECK(j.contains("beyond") == periodic);
    if (!periodic) continue;
    ++held_out;
    // Only 8 lies above train_len 4; min(64, samples 16) examples; every metric named, after "time".
    REQUIRE(j["beyond"].size() == 1);
    const nlohmann::json& b = j["beyond"][0];
    CHECK(b["length"] == 8);
    CHECK(b["samples"] == 16);
    for (const char* m : {"loss", "token_acc", "exact_match"}) CHECK(b[m].is_number());
    CHECK(b["token_acc"].get<double>() >= 0);
    CHECK(b["token_acc"].get<double>() <= 1);
  }
  CHECK(held_out == 3);  // steps 10, 20, 30 (40 is the final evaluation's)
  const std::string log = slurp(fs::path(dir) / "train.log");
  CHECK_THAT(log, Contains("    beyond (16 examples each, "));
  CHECK_THAT(log, Contains(" s), token_acc: 8 "));
  fs::remove_all(dir);
}

TEST_CASE("training is the same with the evaluation beyond training on or off", "[e2e][beyond]") {
  const std::string on = temp_dir("on"), off = temp_dir("off");
  REQUIRE(run_quietly(tiny_spec(), on) == 0);
  REQUIRE(run_quietly(tiny_spec({"eval.beyond_samples=0"}), off) == 0);
  // Every record but the "beyond" lists: the same bits (the samples draw from no training stream).
  std::string a, b;
  for (nlohmann::json j : jsonl(fs::path(on) / "metrics.jsonl")) {
    j.erase("time"), j.erase("tokens_per_s"), j.erase("beyond");
    a += j.dump() + "\n";
  }
  b = timeless(fs::path(off) / "metrics.jsonl");
  CHECK(a == b);
  CHECK_THAT(slurp(fs::path(off) / "metrics.jsonl"), !Contains("beyond"));
  const auto ck_on = latest_checkpoint(on), ck_off = latest_checkpoint(off);
  REQUIRE(ck_on);
  REQUIRE(ck_off);
  CHECK(slurp(fs::path(*ck_on) / "weights.safetensors") == slurp(fs::path(*ck_off) / "weights.safetensors"));
  fs::remove_all(on);
  fs::remove_all(off);
}

TEST_CASE("a run resumed after a kill writes the same records, beyond included, as one run straight",
          "[e2e][beyond][resume]") {
  const std::string straight = temp_dir("straight"), killed = temp_dir("killed");
  const RunSpec spec = tiny_spec({"train.checkpoint_every=10", "train.keep_checkpoints=10"});
  REQUIRE(run_quietly(spec, straight) == 0);
  // What a kill after step 20's checkpoint leaves: no eval.json, checkpoints up to 20, and records past
  // 20 (the resume drops them).
  fs::copy(straight, killed, fs::copy_options::recursive);
  fs::remove(fs::path(killed) / "eval.json");
  for (const auto& e : fs::directory_iterator(fs::path(killed) / "checkpoints"))
    if (std::stoul(e.path().filename().string().substr(5)) > 20) fs::remove_all(e.path());  // step_<digits>
  REQUIRE(latest_checkpoint(killed));
  REQUIRE(std::stoul(fs::path(*latest_checkpoint(killed)).filename().string().substr(5)) == 20);
  REQUIRE(run_quietly(spec, killed) == 0);
  const std::string a = timeless(fs::path(straight) / "metrics.jsonl"), b = timeless(fs::path(killed) / "metrics.jsonl");
  std::size_t with_beyond = 0;
  for (std::size_t p = a.find("\"beyond\":[{"); p != std::string::npos; p = a.find("\"beyond\":[{", p + 1)) ++with_beyond;
  CHECK(with_beyond == 3);  // steps 10, 20 (kept from before the kill) and 30 (after it)
  CHECK(a == b);
  fs::remove_all(straight);
  fs::remove_all(killed);
}
