// The report of two-operand runs with [eval] operand_grid, on runs with known numbers: results.csv's grid
// rows carry len_a and len_b (empty in the per-length rows), each group with a grid gets a heatmap of exact
// match (mean over seeds, the training range outlined) in summary.md and report.html, and runs without a
// grid get no such section.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "experiments/report/report.hpp"
#include "report_fixture.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;

namespace {

const std::vector<std::size_t> kLens = {4, 8};
const std::vector<std::size_t> kGrid = {2, 4, 6};  // operand lengths; training range 2..4

// Exact match of a cell: distinct per cell and seed, so that a mean over seeds is checkable.
double grid_em(std::size_t a, std::size_t b, int seed) { return 0.5 - 0.02 * double(a) - 0.01 * double(b) + 0.1 * seed; }

// Two encodings x two seeds of addition; rope's runs have an operand grid (seed 2 n/a at (6, 6)), alibi's
// none (written before the grid existed).
void build_grid_sweep(const fs::path& dir) {
  for (const char* enc : {"rope", "alibi"})
    for (int seed : {1, 2}) {
      FakeRun f;
      f.task = "addition", f.encoding = enc, f.seed = seed, f.train_len = 4;
      f.acc = {{4, 0.9}, {8, 0.5}};
      EvalResult r = fake_eval_result(f, kLens);
      if (f.encoding == "rope")
        for (std::size_t a : kGrid)
          for (std::size_t b : kGrid) {
            LengthResult lr;
            lr.length = std::max(a, b), lr.len_a = a, lr.len_b = b;
            lr.in_distribution = a <= 4 && b <= 4;
            if (seed == 2 && a == 6 && b == 6) {
              lr.ok = false, lr.reason = "position 40 is beyond the table";
            } else {
              lr.metrics = {{"token_acc", 0.9}, {"loss", 0.1}, {"exact_match", grid_em(a, b, seed)}};
              lr.samples = 32;
            }
            r.operand_grid.push_back(lr);
          }
      write_fake_run(dir, f, kLens);
      write(dir / f.dir_name() / "eval.json", to_json(r).dump(2));
    }
}

}  // namespace

TEST_CASE("report results.csv: operand_grid rows carry len_a and len_b, length rows leave them empty",
          "[report][operand_grid]") {
  TempDir t;
  build_grid_sweep(t.dir);
  write_report(t.dir.string(), ReportOptions{"auto", false});
  const auto rows = read_csv(t.dir / "results.csv");
  std::size_t grid_rows = 0, length_rows = 0;
  for (const CsvRow& r : rows) {
    REQUIRE(r.count("len_a") == 1);
    REQUIRE(r.count("len_b") == 1);
    CHECK(r.at("len_a").empty() == r.at("len_b").empty());
    (r.at("len_a").empty() ? length_rows : grid_rows)++;
  }
  CHECK(length_rows == 4 * 2 * 3);     // runs x lengths x metrics
  CHECK(grid_rows == 2 * 9 * 3);       // rope's runs x cells x metrics (an n/a cell too, with its reason)
  const auto find = [&](const std::string& seed, const std::string& a, const std::string& b) {
    for (const CsvRow& r : rows)
      if (r.at("encoding.name") == "rope" && r.at("seed") == seed && r.at("len_a") == a && r.at("len_b") == b &&
          r.at("metric") == "exact_match")
        return r;
    FAIL("no results.csv grid row for seed " << seed << " (" << a << ", " << b << ")");
    throw 0;
  };
  const CsvRow c = find("1", "6", "2");
  CHECK(c.at("eval_len") == "6");  // the longer operand
  CHECK(c.at("in_distribution") == "false");
  CHECK(std::stod(c.at("value")) == Approx(grid_em(6, 2, 1)).epsilon(1e-12));
  CHECK(find("2", "4", "2").at("in_distribution") == "true");
  const CsvRow na = find("2", "6", "6");
  CHECK(na.at("value").empty());
  CHECK(na.at("na_reason") == "position 40 is beyond the table");
}

TEST_CASE("report operand_grid heatmap: per group with a grid, exact match mean over seeds, training range",
          "[report][operand_grid]") {
  TempDir t;
  build_grid_sweep(t.dir);
  const ReportResult res = write_report(t.dir.string(), ReportOptions{});
  const fs::path plots = t.dir / "plots";
  // Groups in directory order: alibi (1) has no grid, rope (2) has one.
  REQUIRE(fs::exists(plots / "operand_grid_2_rope.dat"));
  CHECK_FALSE(fs::exists(plots / "operand_grid_1_alibi.dat"));
  const std::string dat = slurp(plots / "operand_grid_2_rope.dat");
  INFO(dat);
  // len_a len_b mean std n n_na in_distribution, in percent; (6, 6) from seed 1 only.
  const std::string c42 = line_starting(dat, "4 2 ");
  REQUIRE_FALSE(c42.empty());
  CHECK(std::stod(c42.substr(4)) == Approx(100 * (grid_em(4, 2, 1) + grid_em(4, 2, 2)) / 2).epsilon(1e-6));
  CHECK_THAT(c42, Contains(" 2 0 1"));
  CHECK_THAT(line_starting(dat, "6 6 "), Contains(" 1 1 0"));
  const std::string gp = slurp(plots / "operand_grid_2_rope.gp");
  CHECK_THAT(gp, Contains("exact match, mean over 2 seeds"));
  CHECK_THAT(gp, Contains("set object 1 rect from 1, 1 to 5, 5"));  // cells 2..4, each 2 wide
  CHECK_THAT(gp, Contains("with image"));
  fs::remove_all("/tmp/heat_sweep"); fs::copy(t.dir, "/tmp/heat_sweep", fs::copy_options::recursive);
  const std::string html = slurp(t.dir / "report.html");
  CHECK_THAT(html, Contains("id=\"operand-grid\""));
  CHECK(count_of(html, "operand_grid_2_rope.gp") >= 1);
  if (have_gnuplot()) {
    INFO((res.warnings.empty() ? "" : res.warnings.front()));
    CHECK(is_png(plots / "operand_grid_2_rope.png"));
    CHECK_THAT(slurp(t.dir / "summary.md"), Contains("[operand_grid_2_rope.png](plots/operand_grid_2_rope.png)"));
  }
}

TEST_CASE("report without operand_grid: no heatmap, no section, empty len_a and len_b", "[report][operand_grid]") {
  TempDir t;
  for (int seed : {1, 2}) {
    FakeRun f;
    f.seed = seed;
    f.acc = {{8, 0.9}, {16, 0.8}};
    write_fake_run(t.dir, f, {8, 16});
  }
  write_report(t.dir.string(), ReportOptions{});
  for (const auto& e : fs::directory_iterator(t.dir / "plots"))
    CHECK(e.path().filename().string().rfind("operand_grid_", 0) == std::string::npos);
  CHECK_THAT(slurp(t.dir / "report.html"), !Contains("operand-grid"));
  const auto rows = read_csv(t.dir / "results.csv");
  REQUIRE(rows.size() == 2 * 2 * 3);
  for (const CsvRow& r : rows) CHECK((r.at("len_a").empty() && r.at("len_b").empty()));
}
