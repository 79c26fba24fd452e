// The report's research tables and curves, on runs with known numbers: steps to target (first held-out
// evaluation reaching the target; runs that never reach it counted, not averaged), held-out curves that
// carry stopped runs forward, chance rows and lines, full-precision CSV, ranks / MRR over tasks, the LM
// loss-per-position plot; and on real runs: evaluation lines in train.log, steps to target from what
// the trainer logged.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/report/report.hpp"
#include "experiments/report/report_detail.hpp"
#include "experiments/run/run.hpp"
#include "report_fixture.hpp"
#include "tiny_config.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;
namespace rd = pelab::report_detail;

namespace {

const std::vector<std::size_t> kLens = {8, 16, 32, 64};

ReportOptions no_plots() {
  ReportOptions o;
  o.plots = false;
  return o;
}

// rope x 3 seeds with a target (token_acc >= 0.9, eval every 100, limit 600): seed 1 reaches it at 200
// (exactly 0.9), seed 2 at 400, seed 3 never; sinusoidal x 2 seeds without a target.
void build_steps_sweep(const fs::path& dir) {
  FakeRun r;
  r.acc = {{8, 0.9}, {16, 0.9}, {32, 0.5}, {64, 0.25}};
  r.seed = 1;
  r.held_out = {{100, 0.5}, {200, 0.9}};
  write_fake_run(dir, r, kLens);
  // A record at another length (ignored) and the final evaluation repeating step 200 (counted once).
  const fs::path m = dir / r.dir_name() / "metrics.jsonl";
  write(m, slurp(m) +
               "{\"step\":100,\"split\":\"eval\",\"length\":8,\"loss\":0.0,\"token_acc\":1.0,\"exact_match\":1.0}\n"
               "{\"step\":200,\"split\":\"eval\",\"length\":16,\"loss\":0.1,\"token_acc\":0.9,\"exact_match\":0.5}\n");
  r.seed = 2;
  r.held_out = {{100, 0.3}, {200, 0.6}, {300, 0.8}, {400, 0.95}};
  write_fake_run(dir, r, kLens);
  r.seed = 3;
  r.held_out = {{100, 0.2}, {200, 0.4}, {300, 0.7}, {400, 0.8}, {500, 0.85}, {600, 0.875}};
  write_fake_run(dir, r, kLens);
  FakeRun s = r;
  s.encoding = "sinusoidal";
  s.config = "[train]\nsteps = 600\neval_every = 100\n";
  for (int seed : {1, 2}) {
    s.seed = seed;
    write_fake_run(dir, s, kLens);
  }
}

}  // namespace

TEST_CASE("report steps to target: the first held-out evaluation reaching it, over the runs that did") {
  TempDir t;
  build_steps_sweep(t.dir);
  write_report(t.dir.string(), no_plots());
  const std::string md = slurp(t.dir / "summary.md");
  INFO(md);
  CHECK_THAT(md, Contains("## steps to target: copy, train_len 16"));
  const std::string h = "## steps to target";
  CHECK(md_row(md, h, "encoding.name") ==
        Cells{"encoding.name", "target", "steps to target", "reached", "eval every", "step limit"});
  // 200 and 400: mean 300, sample std sqrt(2 * 100^2) = 141; seed 3 counted as not reaching it.
  CHECK(md_row(md, h, "rope") == Cells{"rope", "token_acc ≥ 90%", "300 ± 141", "2/3", "100", "600"});
  CHECK(md_row(md, h, "sinusoidal") == Cells{"sinusoidal", "none", "-", "-", "100", "600"});
  CHECK_THAT(md, Contains("not in the mean"));

  const auto rows = read_csv(t.dir / "steps_to_target.csv");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].at("encoding.name") == "rope");
  CHECK(rows[0].at("steps_to_target") == "200");
  CHECK(rows[0].at("reached") == "true");
  CHECK(rows[0].at("eval_every") == "100");
  CHECK(rows[0].at("target_metric") == "token_acc");
  CHECK(std::stod(rows[0].at("target")) == 0.9);
  CHECK(rows[1].at("steps_to_target") == "400");
  CHECK(rows[2].at("steps_to_target").empty());
  CHECK(rows[2].at("reached") == "false");
  CHECK(rows[2].at("seed") == "3");
  CHECK(rows[3].at("target_metric").empty());
  CHECK(rows[3].at("reached").empty());
}

TEST_CASE("report steps to target of a lower-is-better metric, and runs that never evaluated") {
  rd::Run r;
  r.settings.known = true;
  r.settings.early_stop_metric = "loss";
  r.settings.early_stop_target = 0.5;
  for (auto [step, loss] : {std::pair<long, double>{10, 1.0}, {20, 0.6}, {30, 0.5}, {40, 0.3}}) {
    rd::HeldOut h;
    h.step = step;
    h.metrics["loss"] = loss;
    r.held_out.push_back(h);
  }
  rd::TargetResult tr = rd::steps_to_target(r);
  CHECK(tr.has_target);
  CHECK(tr.step == std::optional<long>(30));
  CHECK(rd::target_text("loss", 0.5) == "loss ≤ 0.5");
  CHECK(rd::target_text("exact_match", 0.995) == "exact_match ≥ 99.5%");
  r.held_out.clear();
  CHECK_FALSE(rd::steps_to_target(r).step.has_value());
  r.settings.early_stop_metric.clear();
  CHECK_FALSE(rd::steps_to_target(r).has_target);
}

TEST_CASE("report held-out curves count a stopped run at its last value") {
  TempDir t;
  build_steps_sweep(t.dir);
  ReportOptions opt;
  opt.gnuplot = "/nonexistent/gnuplot";  // the data is what is checked here
  write_report(t.dir.string(), opt);
  const std::string dat = slurp(t.dir / "plots" / "held_out_curves.dat");
  INFO(dat);
  // rope at 300: seed 1 (stopped at 200 with 90%) carried, seed 2 80%, seed 3 70%.
  auto expect = [](long step, std::vector<double> xs, int carried) {
    double mean = 0;
    for (double& x : xs) mean += (x = 100 * x);
    mean /= static_cast<double>(xs.size());
    double ss = 0;
    for (double x : xs) ss += (x - mean) * (x - mean);
    const double sd = std::sqrt(ss / static_cast<double>(xs.size() - 1));
    return std::to_string(step) + " " + rd::gp_num(mean) + " " + rd::gp_num(sd) + " " + std::to_string(xs.size()) +
           " " + std::to_string(carried) + " ";
  };
  CHECK_THAT(dat, Contains("\n" + expect(100, {0.5, 0.3, 0.2}, 0)));
  CHECK_THAT(dat, Contains("\n" + expect(300, {0.9, 0.8, 0.7}, 1)));
  CHECK_THAT(dat, Contains("\n" + expect(500, {0.9, 0.95, 0.85}, 2)));
  CHECK_THAT(dat, Contains("\n" + expect(600, {0.9, 0.95, 0.875}, 2)));
  // Each run's last evaluation, for the markers.
  CHECK_THAT(dat, Contains("# rope: last evaluation of each run\n200 90\n400 95\n600 87.5\n"));
  const std::string gp = slurp(t.dir / "plots" / "held_out_curves.gp");
  CHECK_THAT(gp, Contains("a run's last evaluation"));
  CHECK_THAT(slurp(t.dir / "summary.md"), !Contains("held_out_curves.png"));  // not rendered: not linked
}

TEST_CASE("report chance: a row in each accuracy table, a column in summary.csv, a line in the length plot") {
  TempDir t;
  FakeRun r;
  r.acc = {{8, 0.9}, {16, 0.8}, {32, 0.3}};  // n/a at 64: chance is still known there
  r.chance = {{8, 0.2}, {16, 0.15}, {32, 0.125}, {64, 0.1}};
  for (int seed : {1, 2}) {
    r.seed = seed;
    write_fake_run(t.dir, r, kLens);
  }
  ReportOptions opt;
  opt.gnuplot = "/nonexistent/gnuplot";
  write_report(t.dir.string(), opt);
  const std::string md = slurp(t.dir / "summary.md");
  INFO(md);
  CHECK(md_row(md, "## token accuracy", "chance") == Cells{"chance", "20.0", "15.0", "12.5", "10.0"});
  // Exact match: the squares (4, 2.25, 1.5625 and 1 percent).
  CHECK(md_row(md, "## exact match", "chance") ==
        Cells{"chance", "4.0", rd::value_text(0.15 * 0.15, "exact_match"), "1.6", "1.0"});
  CHECK_THAT(md, Contains("The chance row is the expected token_acc"));
  const auto rows = read_csv(t.dir / "summary.csv");
  int checked = 0;
  for (const CsvRow& row : rows) {
    if (row.at("metric") == "token_acc" && row.at("length") == "64") {
      CHECK(std::stod(row.at("chance")) == 0.1);
      CHECK(row.at("mean").empty());
      ++checked;
    }
    if (row.at("metric") == "loss") {
      CHECK(row.at("chance").empty());
      ++checked;
    }
  }
  CHECK(checked == 5);
  CHECK_THAT(slurp(t.dir / "plots" / "length_generalization.dat"),
             Contains("# chance (columns: length chance)\n8 20\n16 15\n32 12.5\n64 10\n"));
  CHECK_THAT(slurp(t.dir / "plots" / "length_generalization.gp"), Contains("title \"chance\""));

  // Two tasks with different chance levels: a row per task.
  TempDir t2;
  for (const char* task : {"copy", "reverse"}) {
    FakeRun f = r;
    f.task = task;
    f.sweep_task = true;
    if (f.task == "reverse") f.chance = {{8, 0.5}, {16, 0.25}, {32, 0.125}, {64, 0.0625}};
    write_fake_run(t2.dir, f, kLens);
  }
  write_report(t2.dir.string(), no_plots());
  const std::string md2 = slurp(t2.dir / "summary.md");
  INFO(md2);
  CHECK(md_row(md2, "## token accuracy", "chance (copy)") == Cells{"chance (copy)", "", "20.0", "15.0", "12.5", "10.0"});
  CHECK(md_row(md2, "## token accuracy", "chance (reverse)") ==
        Cells{"chance (reverse)", "", "50.0", "25.0", "12.5", rd::value_text(0.0625, "token_acc")});
}

TEST_CASE("report summary.csv keeps full double precision") {
  TempDir t;
  const std::vector<double> accs = {1.0 / 3, 2.0 / 7, 0.1 + 0.2};
  FakeRun r;
  for (int seed : {1, 2, 3}) {
    r.seed = seed;
    r.acc = {{8, accs[seed - 1]}, {16, 0.5}, {32, 0.5}, {64, 0.5}};
    write_fake_run(t.dir, r, kLens);
  }
  write_report(t.dir.string(), no_plots());
  const double mean = (accs[0] + accs[1] + accs[2]) / 3;
  double ss = 0;
  for (double a : accs) ss += (a - mean) * (a - mean);
  for (const CsvRow& row : read_csv(t.dir / "summary.csv"))
    if (row.at("metric") == "token_acc" && row.at("length") == "8") {
      CHECK(std::stod(row.at("mean")) == mean);  // bit-exact, not approximately
      CHECK(std::stod(row.at("std")) == std::sqrt(ss / 2));
      return;
    }
  FAIL("no token_acc row at length 8");
}

TEST_CASE("report average ranks: ties share the mean rank, unscored rank last") {
  using S = std::vector<std::optional<double>>;
  CHECK(rd::average_ranks(S{3.0, 1.0, 3.0, std::nullopt, std::nullopt}, false) ==
        std::vector<double>{1.5, 3, 1.5, 4.5, 4.5});
  CHECK(rd::average_ranks(S{3.0, 1.0, 3.0, std::nullopt, std::nullopt}, true) ==
        std::vector<double>{2.5, 1, 2.5, 4.5, 4.5});
  CHECK(rd::average_ranks(S{0.5, 0.7, 0.6}, false) == std::vector<double>{3, 1, 2});
  CHECK(rd::average_ranks(S{}, false).empty());
}

TEST_CASE("report ranks encodings per task beyond the training length and gives their MRR") {
  TempDir t;
  // OOD means (32, 64): copy none 0.5, rope 0.375, alibi 0.375 (tie); reverse none n/a at 64 (unscored),
  // rope 0.25, alibi 0.5.
  const std::map<std::string, std::map<std::string, std::pair<double, double>>> ood = {
      {"copy", {{"none", {0.75, 0.25}}, {"rope", {0.5, 0.25}}, {"alibi", {0.375, 0.375}}}},
      {"reverse", {{"none", {0.75, -1}}, {"rope", {0.25, 0.25}}, {"alibi", {0.5, 0.5}}}}};
  for (const auto& [task, encs] : ood)
    for (const auto& [enc, v] : encs) {
      FakeRun f;
      f.task = task;
      f.sweep_task = true;
      f.encoding = enc;
      f.acc = {{8, 1.0}, {16, 1.0}, {32, v.first}};
      if (v.second >= 0) f.acc[64] = v.second;
      write_fake_run(t.dir, f, kLens);
    }
  write_report(t.dir.string(), no_plots());
  const std::string md = slurp(t.dir / "summary.md");
  INFO(md);
  const std::size_t at = md.find("## rank by token accuracy (%) beyond the training length, per task");
  REQUIRE(at != std::string::npos);
  const std::string sec = md.substr(at, md.find("\n## ", at + 1) - at);
  CHECK(md_row(sec, "", "encoding.name") == Cells{"encoding.name", "copy", "reverse", "MRR"});
  // MRR: alibi (1/2.5 + 1/1) / 2 = 0.7; none (1 + 1/3) / 2 = 0.667; rope (1/2.5 + 1/2) / 2 = 0.45.
  CHECK(md_row(sec, "", "alibi") == Cells{"alibi", "2.5 (37.5)", "1 (50.0)", "0.700"});
  CHECK(md_row(sec, "", "none") == Cells{"none", "1 (50.0)", "3 (n/a)", "0.667"});
  CHECK(md_row(sec, "", "rope") == Cells{"rope", "2.5 (37.5)", "2 (25.0)", "0.450"});
  CHECK(sec.find("| alibi ") < sec.find("| none "));
  CHECK(sec.find("| none ") < sec.find("| rope "));
  CHECK_THAT(sec, Contains("copy: 32, 64; reverse: 32, 64"));
  // exact match gets its own ranking; a single-task sweep none.
  CHECK_THAT(md, Contains("## rank by exact match (%) beyond"));
  TempDir one;
  build_steps_sweep(one.dir);
  write_report(one.dir.string(), no_plots());
  CHECK_THAT(slurp(one.dir / "summary.md"), !Contains("## rank by"));
}

TEST_CASE("report plots a language model's loss per position at the longest length each group has") {
  TempDir t;
  for (const char* enc : {"rope", "learned"})
    for (int seed : {1, 2}) {
      FakeRun f;
      f.task = "char_lm";
      f.lm = true;
      f.encoding = enc;
      f.seed = seed;
      f.config = "";
      f.acc = {{16, 0.5}, {32, 0.4}};
      f.held_out = {{100, 0.5}};  // only the final evaluation: no held-out curve to draw
      if (f.encoding == "rope") f.acc[64] = 0.3;
      for (std::size_t len : kLens) {
        std::vector<Bucket> bs;
        for (std::size_t from = 0; from < len; from += 8) bs.push_back({from, from + 8, 1 + 0.25 * from / 8 + 0.5 * seed});
        f.buckets[len] = bs;
      }
      write_fake_run(t.dir, f, kLens);
    }
  const ReportResult res = write_report(t.dir.string());
  const std::string dat = slurp(t.dir / "plots" / "loss_by_position.dat");
  INFO(dat);
  // Mean over the two seeds: 1 + 0.25 b + 0.75.
  CHECK_THAT(dat, Contains("# rope (length 64)\n0 8 4 1.75 2\n8 16 12 2 2\n"));
  CHECK_THAT(dat, Contains("\n56 64 60 3.5 2\n"));
  CHECK_THAT(dat, Contains("# learned (length 32)\n0 8 4 1.75 2\n"));
  CHECK_THAT(dat, !Contains("\n32 40 36 2.75 2\n\n\n# learned"));  // rope's block ends at 64, learned's at 32
  CHECK_THAT(slurp(t.dir / "plots" / "loss_by_position.gp"), Contains("training context"));
  CHECK_FALSE(fs::exists(t.dir / "plots" / "held_out_curves.dat"));
  if (!have_gnuplot()) {
    WARN("gnuplot not installed: PNG rendering not checked");
    return;
  }
  for (const std::string& w : res.warnings) INFO(w);
  CHECK(res.warnings.empty());
  CHECK(is_png(t.dir / "plots" / "loss_by_position.png"));
  CHECK_THAT(slurp(t.dir / "summary.md"), Contains("](plots/loss_by_position.png)"));
}

TEST_CASE("real runs log held-out evaluations to train.log and the report reads their steps to target", "[e2e]") {
  TempDir t;
  const LoadedConfig loaded = parse_config(
      test::tiny_config(40) + "[sweep]\n\"train.seed\" = [0, 1]\n", "tiny.toml",
      {"train.eval_every=10", "train.early_stop_metric=token_acc", "train.early_stop_target=0.0"});
  REQUIRE(loaded.runs.size() == 2);
  for (const RunSpec& spec : loaded.runs) {
    RunOptions ro;
    ro.run_dir = (t.dir / spec.dir_name).string();
    ro.console = false;
    REQUIRE(run_experiment(spec, ro) == 0);
  }
  // Target 0 is met at the first evaluation: both runs stop at step 10.
  const std::string log = slurp(t.dir / loaded.runs[0].dir_name / "train.log");
  INFO(log);
  CHECK_THAT(log, Contains("eval @ 10 (length 4): loss "));
  CHECK_THAT(log, Contains("early stop at step 10"));
  CHECK_THAT(log, Contains("evaluation (copy, trained on sizes up to 4)"));
  CHECK(has_line_containing(log, "       8  OOD ", "%"));
  CHECK(count_of(log, "eval @ ") == 1);

  write_report(t.dir.string(), no_plots());
  const std::string md = slurp(t.dir / "summary.md");
  INFO(md);
  CHECK(md_row(md, "## steps to target", "none") == Cells{"none", "token_acc ≥ 0%", "10 ± 0", "2/2", "10", "40"});

  // Without early stopping every evaluation is logged, and the report has no steps table.
  TempDir t2;
  const RunSpec spec = parse_config(test::tiny_config(40), "tiny.toml", {"train.eval_every=10"}).runs.at(0);
  RunOptions ro;
  ro.run_dir = (t2.dir / "run").string();
  ro.console = false;
  REQUIRE(run_experiment(spec, ro) == 0);
  const std::string log2 = slurp(t2.dir / "run" / "train.log");
  CHECK(count_of(log2, "eval @ ") == 3);  // 10, 20, 30; the end (40) is the final evaluation
  CHECK_THAT(log2, Contains("eval @ 30 (length 4)"));
  write_report(t2.dir.string(), ReportOptions{"auto", true, "/nonexistent/gnuplot"});
  CHECK_THAT(slurp(t2.dir / "summary.md"), !Contains("steps to target"));
  // The held-out curve has the periodic evaluations and the final one at train_len 4.
  const std::string dat = slurp(t2.dir / "plots" / "held_out_curves.dat");
  INFO(dat);
  for (const char* step : {"\n10 ", "\n20 ", "\n30 ", "\n40 "}) CHECK_THAT(dat, Contains(step));
}
