// [loop] (looped depth, layers/transformer.hpp LoopSettings): bad settings are refused at their line,
// saying what is allowed; 0 loops, and a length rule that gives 0 loops at some length, never run; a
// trained looped run evaluated with more loops (`pelab eval --set loop.*`).
#include <catch2/catch.hpp>
#include <string>

#include <filesystem>

#include "cli_helpers.hpp"
#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "training/fs.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace pelab;

namespace {
std::string error_of(const std::string& text) { return test::config_error(text, "looped.toml", {}); }
const std::string kModel = "[model]\nn_layers = 2\n";  // lines 1-2; [loop] starts at line 3
}  // namespace

TEST_CASE("[loop]: 0 loops, a rule giving 0 loops and a group outside the model are refused at their line",
          "[config][errors][loop]") {
  CHECK_THAT(error_of(kModel + "[loop]\ntimes = 0\n"),
             StartsWith("looped.toml:4: [loop] key 'times' has value 0; expected an integer in [1, 4096]"));
  // floor(0.5 T) - 1 is 0 at T = 1 .. 3: refused, though it is positive at every length the task trains on
  CHECK_THAT(error_of(kModel + "[loop]\nrule = \"length\"\nper_token = 0.5\noffset = -1\n"),
             StartsWith("looped.toml:6: [loop] offset = -1 with per_token = 0.5: rule = \"length\" gives N(T) = "
                        "floor(per_token T) + offset < 1 at T = 1 token") &&
                 Contains("expected floor(per_token) + offset >= 1"));
  CHECK_THAT(error_of(kModel + "[loop]\nrule = \"length\"\nper_token = 0\n"),
             StartsWith("looped.toml:3: [loop] offset = 0 with per_token = 0.0: "));  // offset not given: the header
  CHECK_THAT(error_of(kModel + "[loop]\nfirst = 2\ntimes = 2\n"),
             StartsWith("looped.toml:4: [loop] first = 2 is past the last block (model.n_layers = 2); expected 0..1"));
  CHECK_THAT(error_of(kModel + "[loop]\nfirst = 1\nblocks = 2\ntimes = 2\n"),
             StartsWith("looped.toml:5: [loop] blocks = 2 from first = 1 runs past model.n_layers = 2; expected 1..1"));
  CHECK_THAT(error_of(kModel + "[loop]\ntimes = 3\nrule = \"length\"\n"),
             StartsWith("looped.toml:4: [loop] times = 3 applies to rule = \"fixed\" only"));
  CHECK_THAT(error_of(kModel + "[loop]\noffset = 2\n"),
             StartsWith("looped.toml:4: [loop] offset applies to rule = \"length\" only"));
  CHECK_THAT(error_of(kModel + "[loop]\nrule = \"adaptive\"\n"),
             StartsWith("looped.toml:4: [loop] key 'rule' has value \"adaptive\"; expected one of: fixed, length"));
  CHECK_THAT(error_of(kModel + "[loop]\nper_token = -1\nrule = \"length\"\n"), StartsWith("looped.toml:4: [loop] key 'per_token'"));
  CHECK(error_of(kModel + "[loop]\ntimes = 4\nfirst = 1\n") == "(no error)");
  CHECK(error_of(kModel + "[loop]\nrule = \"length\"\nper_token = 0.5\noffset = 1\n") == "(no error)");
  // N(T) = T - 1 is 0 at T = 1: refused
  CHECK_THAT(error_of(kModel + "[loop]\nrule = \"length\"\nper_token = 1\noffset = -1\n"),
             StartsWith("looped.toml:6: [loop] offset = -1 with per_token = 1.0: "));
}

TEST_CASE("[loop] is written to the resolved config and read back", "[config][loop]") {
  const LoadedConfig a = parse_config(kModel + "[loop]\nfirst = 1\nrule = \"length\"\nper_token = 0.25\noffset = 2\n",
                                      "looped.toml", {});
  const std::string text = to_toml(a.config);
  CHECK_THAT(text, Contains("[loop]\nfirst = 1\nblocks = 0\nrule = \"length\"\ntimes = 1\nper_token = 0.25\noffset = 2\n"));
  const LoadedConfig b = parse_config(text, "config.toml", {});
  CHECK(b.config.model.loop.first == 1);
  CHECK(b.config.model.loop.rule == "length");
  CHECK(b.config.model.loop.per_token == 0.25);
  CHECK(b.config.model.loop.offset == 2);
}

TEST_CASE("a looped run evaluates with other loop settings, and the trained evaluation is untouched", "[loop][cli]") {
  const std::string dir = test::fresh_temp_dir("looped_eval"), cfg = dir + "/c.toml", run = dir + "/run", log = dir + "/log";
  write_file_atomic(cfg, "[model]\nd_model = 16\nn_layers = 2\nn_heads = 2\n[loop]\nfirst = 1\ntimes = 2\n"
                         "[task]\nname = \"copy\"\ntrain_len = 4\n[train]\nsteps = 10\nbatch_size = 4\n"
                         "[eval]\nlengths = [4, 8]\nsamples = 8\n");
  REQUIRE(test::run_cli("train " + cfg + " --out " + run + " --quiet", log) == 0);
  const std::string trained = read_file(run + "/eval.json");
  REQUIRE(test::run_cli("eval " + run + " --set loop.times=6 --name six", log) == 0);
  REQUIRE(test::run_cli("eval " + run + " --set loop.times=2 --name same", log) == 0);
  CHECK(read_file(run + "/eval.json") == trained);
  const EvalResult t = read_eval_result(run + "/eval.json"), six = read_eval_result(run + "/eval-six.json"),
                   same = read_eval_result(run + "/eval-same.json");
  REQUIRE(six.results.size() == 2);
  CHECK(*six.results[1].metric("loss") != *t.results[1].metric("loss"));   // six loops: another model output
  CHECK(*same.results[1].metric("loss") == *t.results[1].metric("loss"));  // the trained count: the same
  CHECK(test::run_cli("eval " + run + " --set loop.times=0 --name none", log) == 2);
  CHECK(test::has(read_file(log), "[loop] key 'times' has value 0; expected an integer in [1, 4096]"));
  std::filesystem::remove_all(dir);
}
