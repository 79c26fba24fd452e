// The report's heatmap of named evaluations at one task parameter each (the passkey depth x length grid,
// `pelab eval --set task.passkey.depth=D --name ...`), on runs with known numbers: one heatmap per group
// without the evaluation's name, x = the parameter in %, y = the eval length, exact match mean over seeds.
#include <catch2/catch.hpp>

#include "experiments/report/report.hpp"
#include "report_fixture.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;

namespace {

double em(double depth, std::size_t len, int seed) { return 0.9 - 0.5 * depth - 0.001 * double(len) + 0.01 * seed; }

// rope with 2 seeds and named evaluations at depths 0 and 0.5; alibi with one seed and no named evaluation.
void build_depth_sweep(const fs::path& dir) {
  const std::vector<std::size_t> lens = {16, 32};
  for (const char* enc : {"rope", "alibi"})
    for (int seed : {1, 2}) {
      if (std::string(enc) == "alibi" && seed == 2) continue;
      FakeRun f;
      f.task = "passkey", f.encoding = enc, f.seed = seed, f.train_len = 16;
      f.acc = {{16, 0.9}, {32, 0.5}};
      write_fake_run(dir, f, lens);
      if (std::string(enc) != "rope") continue;
      for (double depth : {0.0, 0.5}) {
        EvalResult r = fake_eval_result(f, lens);
        const std::string name = depth == 0 ? "depth0" : "depth50";
        r.eval_name = name;
        r.eval_settings = {depth == 0 ? "task.passkey.depth=0.0" : "task.passkey.depth=0.5"};
        for (LengthResult& lr : r.results) lr.metrics["exact_match"] = em(depth, lr.length, seed);
        write(dir / f.dir_name() / ("eval-" + name + ".json"), to_json(r).dump(2));
      }
    }
}

}  // namespace

TEST_CASE("report: named evaluations at one task parameter each make a parameter x length heatmap",
          "[report][operand_grid]") {
  TempDir t;
  build_depth_sweep(t.dir);
  write_report(t.dir.string(), ReportOptions{});
  std::vector<std::string> dats;
  for (const auto& e : fs::directory_iterator(t.dir / "plots"))
    if (e.path().filename().string().rfind("operand_grid_eval_", 0) == 0 && e.path().extension() == ".dat")
      dats.push_back(e.path().filename().string());
  REQUIRE(dats.size() == 1);  // rope only: alibi has no named evaluation
  CHECK_THAT(dats[0], Contains("rope"));
  const std::string dat = slurp(t.dir / "plots" / dats[0]);
  INFO(dat);
  const std::string c = line_starting(dat, "50 32 ");  // depth 50%, length 32: mean over seeds 1 and 2
  REQUIRE_FALSE(c.empty());
  CHECK(std::stod(c.substr(6)) == Approx(100 * (em(0.5, 32, 1) + em(0.5, 32, 2)) / 2).epsilon(1e-6));
  CHECK_THAT(c, Contains(" 2 0 0"));                      // 2 values, none n/a, beyond the training length
  CHECK_THAT(line_starting(dat, "0 16 "), Contains(" 2 0 1"));  // in distribution
  const std::string gp = slurp(t.dir / "plots" / (dats[0].substr(0, dats[0].size() - 4) + ".gp"));
  CHECK_THAT(gp, Contains("task.passkey.depth (%)") && Contains("eval length") && Contains("mean over 2 seeds"));
  CHECK_THAT(slurp(t.dir / "report.html"), Contains("id=\"operand-grid\""));
}
