// The answer first (issue #43 item 4): the tie rule on the cases pelab.reproduce is held to as well
// (tests/scripts/tie_rule_cases.json, also run by tests/scripts/test_tie_rule_cases.py), the headline it
// feeds, and report.html's order: headline, main plot, then the tables, all-zero tables folded below.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/report/report.hpp"
#include "experiments/report/report_detail.hpp"
#include "report_fixture.hpp"
#include "test_paths.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;
namespace rd = pelab::report_detail;

namespace {

rd::SeedStats seed_stats(const nlohmann::json& s) {
  rd::SeedStats st;
  if (!s[0].is_null()) st.mean = s[0].get<double>();
  if (!s[1].is_null()) st.std = s[1].get<double>();
  st.n = s[2].get<int>();
  return st;
}

// Two encodings x seeds with token accuracy `hi` / `lo` at the lengths beyond training (16 -> 32), spread
// +-`spread` over seeds 1, 2.
void build(const fs::path& dir, double hi, double lo, double spread) {
  for (const auto& [enc, at] : {std::pair<const char*, double>{"rope", hi}, {"sinusoidal", lo}})
    for (int seed : {1, 2}) {
      FakeRun f;
      f.encoding = enc;
      f.seed = seed;
      const double d = seed == 1 ? spread : -spread;
      f.acc = {{8, 1.0}, {16, 0.9}, {32, at + d}};
      f.chance = {{8, 0.1}, {16, 0.1}, {32, 0.1}};
      f.held_out = {{100, 0.5}, {200, 0.95}};
      write_fake_run(dir, f, {8, 16, 32});
    }
}

}  // namespace

TEST_CASE("tie rule: the report's port gives pelab.reproduce's answers on every shared case") {
  const nlohmann::json j = nlohmann::json::parse(slurp(fs::path(PELAB_SOURCE_DIR) / "tests" / "scripts" / "tie_rule_cases.json"));
  REQUIRE(j["cases"].size() >= 10);
  for (const auto& c : j["cases"]) {
    INFO(c["name"].get<std::string>());
    std::vector<rd::SeedStats> stats;
    for (const auto& s : c["stats"]) stats.push_back(seed_stats(s));
    const auto groups = rd::tie_groups(stats);
    CHECK(nlohmann::json(groups) == c["groups"]);
    CHECK(rd::separated(stats[0], stats[1]) == c["separated_first_pair"].get<bool>());
  }
}

TEST_CASE("headline: the best group beyond training, the margin, and the seeds' verdict") {
  SECTION("separated") {
    TempDir t;
    build(t.dir, 0.8, 0.4, 0.01);  // 80.0 +- 1.4 against 40.0 +- 1.4
    const auto h = rd::headline(rd::load_sweep(t.dir.string()), "token_acc");
    REQUIRE(h.size() == 1);
    CHECK_THAT(h[0], Contains("the best token accuracy (%) is rope's: 80.0 ± 1.4 (n = 2), 40.0 points above the next, "
                              "sinusoidal (40.0 ± 1.4 (n = 2))"));
    CHECK_THAT(h[0], Contains("The seeds separate the two"));
  }
  SECTION("a tie within the seed spread") {
    TempDir t;
    build(t.dir, 0.5, 0.45, 0.1);
    const auto h = rd::headline(rd::load_sweep(t.dir.string()), "token_acc");
    REQUIRE(h.size() == 1);
    CHECK_THAT(h[0], Contains("rope's"));
    CHECK_THAT(h[0], Contains("A tie within the seed spread: the seeds do not separate it from sinusoidal."));
  }
  SECTION("lower is better: the lowest loss is best") {
    TempDir t;
    build(t.dir, 0.8, 0.4, 0.01);
    const auto h = rd::headline(rd::load_sweep(t.dir.string()), "loss");
    REQUIRE(h.size() == 1);
    CHECK_THAT(h[0], Contains("is rope's"));
    CHECK_THAT(h[0], Contains("below the next, sinusoidal"));
  }
}

TEST_CASE("report.html: headline and main plot before the first table, all-zero tables folded below") {
  TempDir t;
  build(t.dir, 0.8, 0.4, 0.01);
  write_report(t.dir.string());
  const std::string html = slurp(t.dir / "report.html");
  const std::size_t head = html.find("id=\"headline\""), table = html.find("<table");
  REQUIRE(head != std::string::npos);
  REQUIRE(table != std::string::npos);
  CHECK(head < table);
  CHECK_THAT(html.substr(head, 600), Contains("rope&#39;s: 80.0 ± 1.4 (n = 2)"));
  if (have_gnuplot()) {
    const std::size_t plot = html.find("id=\"plot-length_generalization\"");
    REQUIRE(plot != std::string::npos);
    CHECK(head < plot);
    CHECK(plot < table);
  }
  // Exact match is acc / 2 in the fixture: not zero, so not folded; make a sweep where it is.
  CHECK(html.find("id=\"zero-tables\"") == std::string::npos);
  const std::string md = slurp(t.dir / "summary.md");
  CHECK_THAT(md, Contains("**Beyond the training length, the best token accuracy (%) is rope's"));
}

TEST_CASE("report.html: a metric that reads 0 for every group beyond training is folded below the others") {
  TempDir t;
  build(t.dir, 0.0, 0.0, 0.0);  // token accuracy 0 beyond training, so exact match (acc / 2) too
  write_report(t.dir.string(), ReportOptions{});
  const std::string html = slurp(t.dir / "report.html");
  const std::size_t fold = html.find("<details id=\"zero-tables\"");
  REQUIRE(fold != std::string::npos);
  // The chosen metric (token accuracy) stays up; exact match's two tables move into the fold.
  CHECK(html.find("id=\"metric-token_acc\"") < fold);
  CHECK(html.find("id=\"metric-exact_match\"") > fold);
  CHECK(html.find("id=\"ood-exact_match\"") > fold);
  CHECK_THAT(html.substr(fold, 300), Contains("exact match (%): 0 for every group beyond the training length"));
}
