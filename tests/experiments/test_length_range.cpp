// Evaluation at every length of a range ([eval] length_range, `pelab eval --length-range`): parsing,
// its errors (file:line, the key, what is allowed), the resolved config, the same results as the list
// form, and a report of 500 lengths that stays readable (a selection of columns, a linear plot axis).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/report/report.hpp"
#include "cli_helpers.hpp"
#include "report_fixture.hpp"
#include "tiny_config.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return test::config_error(text, "range.toml", overrides);
}

std::vector<std::size_t> iota(std::size_t from, std::size_t to, std::size_t step = 1) {
  std::vector<std::size_t> v;
  for (std::size_t n = from; n <= to; n += step) v.push_back(n);
  return v;
}

}  // namespace

TEST_CASE("length_range expands to every length and writes back as given", "[config][range]") {
  const LoadedConfig a = parse_config("[eval]\nlength_range = [1, 40]\n", "range.toml");
  CHECK(a.runs.at(0).config.eval.lengths == iota(1, 40));
  const LoadedConfig b = parse_config("[eval]\nlength_range = [2, 11, 3]\n", "range.toml");
  CHECK(b.runs.at(0).config.eval.lengths == std::vector<std::size_t>{2, 5, 8, 11});
  // config.toml keeps the range, not 40 numbers; reading it back resolves to the same lengths.
  const std::string text = to_toml(a.runs.at(0).config);
  CHECK_THAT(text, Contains("lengths = []\nlength_range = [1, 40, 1]\n"));
  CHECK(parse_config(text, "config.toml").runs.at(0).config.eval.lengths == iota(1, 40));
  CHECK(to_toml(parse_config(text, "config.toml").runs.at(0).config) == text);
  // Without a range nothing changes: the resolved lengths, no length_range line.
  CHECK_THAT(to_toml(parse_config("", "range.toml").runs.at(0).config), !Contains("length_range"));
  // [] = not given; a sweep's cells each get the range.
  CHECK(parse_config("[eval]\nlength_range = []\n", "r.toml").runs.at(0).config.eval.lengths.size() == 4);
  const LoadedConfig s =
      parse_config("[eval]\nlength_range = [1, 8]\n[sweep]\n\"encoding.name\" = [\"none\", \"rope\"]\n", "r.toml");
  for (const RunSpec& r : s.runs) CHECK(r.config.eval.lengths == iota(1, 8));
  // The override that `pelab eval --length-range` makes, over a run that recorded a list.
  CHECK(parse_config("[eval]\nlengths = [8, 16]\n", "r.toml", {"eval.length_range=[3, 5]", "eval.lengths=[]"})
            .runs.at(0).config.eval.lengths == iota(3, 5));
}

TEST_CASE("length_range errors name the line, the key and what is allowed", "[config][range]") {
  CHECK_THAT(error_of("[eval]\nlength_range = [10, 5]\n"),
             StartsWith("range.toml:2: [eval] key 'length_range' has value [ 10, 5 ]; the range is empty "
                        "(from 10 > to 5); expected from <= to"));
  for (const char* bad : {"[0, 5]", "[5]", "[1, 5, 0]", "[1, 2, 3, 4]", "\"1..5\"", "[1.5, 4]"})
    CHECK_THAT(error_of(std::string("[eval]\nlength_range = ") + bad + "\n"),
               StartsWith("range.toml:2: [eval] key 'length_range' has value ") &&
                   Contains("expected [from, to] or [from, to, step] of positive integers"));
  CHECK_THAT(error_of("[eval]\nlength_range = [1, 1000000]\n"),
             StartsWith("range.toml:2:") && Contains("that is 1000000 lengths; expected at most 100000"));
  // Both forms at once: the range's line, and where the list is.
  CHECK_THAT(error_of("[eval]\nlengths = [8]\nlength_range = [1, 5]\n"),
             StartsWith("range.toml:3: [eval] keys 'lengths' (range.toml:2) and 'length_range' are both set"));
  CHECK_THAT(error_of("[eval]\nlengths = [8]\n", {"eval.length_range=[1, 5]"}),
             StartsWith("--set eval.length_range=[1, 5]: [eval] keys 'lengths' (range.toml:2)"));
  // A range the task cannot generate: assoc_recall's keys run out.
  CHECK_THAT(error_of("[task]\nname = \"assoc_recall\"\ntrain_len = 8\n[eval]\nlength_range = [1, 64]\n"),
             StartsWith("range.toml:5: [eval] length_range [1, 64, 1] includes length ") &&
                 Contains("which task 'assoc_recall' cannot generate"));
  // Offset ids over an explicit max_position too small for the range's longest sequence.
  CHECK_THAT(error_of("[train]\npositions = \"offset\"\nmax_position = 40\n[eval]\nlength_range = [1, 32]\n"),
             StartsWith("range.toml:3: [train] max_position 40 is smaller than the longest eval sequence"));
  CHECK_THAT(error_of("[sweep]\n\"eval.length_range\" = [1, 2]\n"), Contains("is a list and cannot be swept"));
}

TEST_CASE("a training range that excludes the training length is an error", "[config][range]") {
  CHECK_THAT(error_of("[task]\ntrain_len = 8\nmin_len = 9\n"),
             StartsWith("range.toml:3: [task] min_len 9 is greater than train_len 8; expected min_len <= train_len"));
  CHECK_THAT(error_of("[task]\ntrain_len = 8\n", {"task.min_len=12"}),
             StartsWith("--set task.min_len=12: [task] min_len 12 is greater than train_len 8"));
}

TEST_CASE("cli: eval --length-range gives the results of the same lengths listed", "[cli][range]") {
  const std::string dir = test::fresh_temp_dir("range"), cfg = dir + "/tiny.toml", run = dir + "/run";
  std::ofstream(cfg) << test::tiny_config(10);
  REQUIRE(test::run_cli("train " + cfg + " --out " + run, dir + "/log.txt") == 0);
  REQUIRE(test::run_cli("eval " + run + " --length-range 1,9,2 --json " + dir + "/range.json", dir + "/r.txt") == 0);
  REQUIRE(test::run_cli("eval " + run + " --lengths 1,3,5,7,9 --json " + dir + "/list.json", dir + "/l.txt") == 0);
  const std::string range = test::slurp(dir + "/range.json");
  CHECK(range == test::slurp(dir + "/list.json"));
  CHECK(nlohmann::json::parse(range).size() == 5);
  // An empty range, or both flags: exit 2, the flag named, nothing written.
  CHECK(test::run_cli("eval " + run + " --length-range 9,1 --json " + dir + "/bad.json", dir + "/b.txt") == 2);
  CHECK_THAT(test::slurp(dir + "/b.txt"), Contains("--length-range 9,1: [eval] key 'length_range'") &&
                                              Contains("the range is empty"));
  CHECK(test::run_cli("eval " + run + " --length-range 1,4 --lengths 2 --json " + dir + "/bad.json",
                      dir + "/b.txt") != 0);
  CHECK_FALSE(std::filesystem::exists(dir + "/bad.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a report of 500 lengths shows a selection in its tables and every length elsewhere", "[report][range]") {
  test::TempDir t;
  const std::vector<std::size_t> lengths = iota(1, 500);
  for (const char* enc : {"rope", "none"})
    for (int seed : {1, 2}) {
      test::FakeRun f;
      f.encoding = enc, f.seed = seed, f.train_len = 40;
      for (std::size_t n : lengths) f.acc[n] = n <= 40 ? 0.99 : 0.5 / double(seed), f.chance[n] = 0.5;
      test::write_fake_run(t.dir, f, lengths);
    }
  write_report(t.dir.string());
  const std::string md = test::slurp(t.dir / "summary.md");
  INFO(md);
  const auto header = test::md_row(md, "## token accuracy (%): ", "encoding.name");
  CHECK(header == std::vector<std::string>{"encoding.name", "1*", "40*", "50", "100", "150", "200", "250", "300",
                                            "350", "400", "450", "500"});
  CHECK_THAT(md, Contains("The columns are 12 of the 500 evaluated lengths, 1 to 500: "));
  const auto ood = test::md_row(md, "beyond the training length: ", "rope");
  REQUIRE(ood.size() >= 3);
  CHECK(ood[1] == "41...500 (460)");
  CHECK_THAT(ood[2], StartsWith("37.5 ± 17.7 (2)"));
  CHECK(test::read_csv(t.dir / "results.csv").size() == 4 * 500 * 3);  // runs x lengths x metrics
  CHECK(test::read_csv(t.dir / "summary.csv").size() == 2 * 500 * 3);
  const std::string gp = test::slurp(t.dir / "plots" / "length_generalization.gp");
  CHECK_THAT(gp, Contains("set xrange [0:510]") && !Contains("set xtics (") && !Contains("logscale x"));
  CHECK_THAT(gp, Contains(" pi 50 "));
}
