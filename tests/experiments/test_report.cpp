// pelab report: a sweep directory built from known results (2 encodings x 3 seeds, a learned encoding with
// n/a at long lengths, unfinished runs) gives exact summary.csv statistics, a readable summary.md and PNG
// plots; malformed or empty input gives a clear Error; eval.json round-trips; and a sweep of real runs
// (what run.cpp writes) reports in grid order with the values its eval.json files hold.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/report/report.hpp"
#include "experiments/report/report_detail.hpp"
#include "experiments/run/run.hpp"
#include "report_fixture.hpp"
#include "tiny_config.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

const std::vector<long> kLengths = {8, 16, 32, 64};
// Seed offsets {0, .03, .09}: mean = base + .04, sample std = sqrt(.0021).
const std::map<int, double> kDelta = {{1, 0.0}, {2, 0.03}, {3, 0.09}};
const std::map<std::string, std::vector<double>> kBase = {
    {"rope", {0.9, 0.85, 0.6, 0.3}}, {"sinusoidal", {0.88, 0.8, 0.4, 0.1}}, {"learned", {0.9, 0.86, 0.2, 0.0}}};

std::string na_reason(long len) {
  return "encoding 'learned': position " + std::to_string(2 * len + 2) + " is beyond its table of 34 rows";
}

// One finished run, written as run.cpp writes it; `na_from`: lengths >= it are n/a.
EvalResult run_result(const std::string& enc, int seed, long na_from = 1000, bool lm = false) {
  EvalResult r;
  r.label = "encoding.name=" + enc + ",train.seed=" + std::to_string(seed);
  r.assignment = {{"encoding.name", Value(enc)}, {"train.seed", Value(std::int64_t(seed))}};
  r.encoding = enc;
  r.task = lm ? "lm" : "copy";
  r.is_lm = lm;
  r.train_len = 16;
  r.seed = static_cast<std::uint64_t>(seed);
  r.steps = 200;
  r.status = "finished";
  r.final_train_loss = 0.01;
  r.train_seconds = 1.5;
  r.eval_seconds = 0.25;
  r.parameters = 1234;
  for (std::size_t i = 0; i < kLengths.size(); ++i) {
    LengthResult lr;
    lr.length = static_cast<std::size_t>(kLengths[i]);
    lr.in_distribution = kLengths[i] <= 16;
    if (kLengths[i] >= na_from) {
      lr.ok = false;
      lr.reason = na_reason(kLengths[i]);
    } else {
      const double acc = kBase.at(enc)[i] + kDelta.at(seed);
      lr.metrics["loss"] = lm ? 2.0 + i + kDelta.at(seed) : 1.0 - acc;
      lr.metrics["token_acc"] = acc;
      if (!lm) lr.metrics["exact_match"] = acc - 0.1;
      lr.samples = 64;
    }
    r.results.push_back(lr);
  }
  return r;
}

void add_run(const fs::path& sweep, const std::string& enc, int seed, long na_from = 1000, bool lm = false) {
  const EvalResult r = run_result(enc, seed, na_from, lm);
  const std::string& label = r.label;
  const fs::path dir = sweep / label;
  write(dir / "eval.json", to_json(r).dump(2));
  std::string metrics;
  for (int step : {0, 100, 200}) {
    json m = {{"step", step}, {"split", "train"}, {"length", nullptr}, {"loss", 3.0 / (1 + step) + kDelta.at(seed)},
              {"token_acc", nullptr}, {"exact_match", nullptr}, {"lr", 0.001}, {"grad_norm", 1.0},
              {"tokens_per_s", 1000.0}, {"time", step * 0.01}};
    metrics += m.dump() + "\n";
  }
  metrics += json({{"step", 200}, {"split", "eval"}, {"length", 16}, {"loss", 0.1}, {"token_acc", 0.9},
                   {"exact_match", 0.8}, {"lr", nullptr}, {"grad_norm", nullptr}, {"tokens_per_s", nullptr},
                   {"time", nullptr}})
                 .dump() +
             "\n";
  write(dir / "metrics.jsonl", metrics);
}

// 2 encodings x 3 seeds, learned x 2 seeds (seed 1 n/a at 64, seed 2 at 32 and 64), one run still running
// and one not started.
void build_sweep(const fs::path& sweep) {
  for (const char* enc : {"rope", "sinusoidal"})
    for (int seed : {1, 2, 3}) add_run(sweep, enc, seed);
  add_run(sweep, "learned", 1, 64);
  add_run(sweep, "learned", 2, 32);
  write(sweep / "encoding.name=rope,train.seed=4" / "metrics.jsonl",
        "{\"step\": 0, \"split\": \"train\", \"loss\": 3.0}\n{\"step\": 50, \"split\": \"tr");
  fs::create_directories(sweep / "encoding.name=alibi,train.seed=1");
}

const CsvRow& find_row(const std::vector<CsvRow>& rows, const std::string& enc, long len, const std::string& metric) {
  for (const CsvRow& r : rows)
    if (r.at("encoding.name") == enc && r.at("length") == std::to_string(len) && r.at("metric") == metric) return r;
  FAIL("no summary.csv row for " << enc << " " << len << " " << metric);
  throw 0;
}

}  // namespace

TEST_CASE("report summary.csv has exact means sample stds and n/a counts") {
  TempDir t;
  build_sweep(t.dir);
  const ReportResult res = write_report(t.dir.string(), ReportOptions{"auto", false});
  const auto rows = read_csv(t.dir / "summary.csv");
  // 3 groups x 4 lengths x 3 metrics.
  REQUIRE(rows.size() == 36);
  REQUIRE(rows.front().count("in_distribution") == 1);
  REQUIRE(rows.front().count("n_na") == 1);

  const double sd = std::sqrt(0.0021);
  const CsvRow& r64 = find_row(rows, "rope", 64, "token_acc");
  CHECK(std::stod(r64.at("mean")) == Approx(0.34).epsilon(1e-9));
  CHECK(std::stod(r64.at("std")) == Approx(sd).epsilon(1e-8));
  CHECK(r64.at("n") == "3");
  CHECK(r64.at("n_na") == "0");
  CHECK(r64.at("in_distribution") == "false");

  const CsvRow& s8 = find_row(rows, "sinusoidal", 8, "exact_match");
  CHECK(std::stod(s8.at("mean")) == Approx(0.82).epsilon(1e-9));
  CHECK(std::stod(s8.at("std")) == Approx(sd).epsilon(1e-8));
  CHECK(s8.at("in_distribution") == "true");
  const CsvRow& s16 = find_row(rows, "sinusoidal", 16, "loss");
  CHECK(std::stod(s16.at("mean")) == Approx(1 - 0.84).epsilon(1e-9));

  // learned: two seeds at 16; one ok + one n/a at 32 (std 0 when n = 1); both n/a at 64.
  const CsvRow& l16 = find_row(rows, "learned", 16, "token_acc");
  CHECK(std::stod(l16.at("mean")) == Approx(0.875).epsilon(1e-9));
  CHECK(std::stod(l16.at("std")) == Approx(std::sqrt(0.00045)).epsilon(1e-8));
  CHECK(l16.at("n") == "2");
  const CsvRow& l32 = find_row(rows, "learned", 32, "token_acc");
  CHECK(std::stod(l32.at("mean")) == Approx(0.2).epsilon(1e-9));
  CHECK(std::stod(l32.at("std")) == 0.0);
  CHECK(l32.at("n") == "1");
  CHECK(l32.at("n_na") == "1");
  const CsvRow& l64 = find_row(rows, "learned", 64, "exact_match");
  CHECK(l64.at("mean").empty());
  CHECK(l64.at("std").empty());
  CHECK(l64.at("n") == "0");
  CHECK(l64.at("n_na") == "2");

  // Written files are listed; no temp file left behind.
  REQUIRE(res.files_written.size() == 5);
  CHECK(fs::path(res.files_written[0]).filename() == "summary.csv");
  CHECK(fs::path(res.files_written[1]).filename() == "steps_to_target.csv");
  CHECK(fs::path(res.files_written[2]).filename() == "results.csv");
  CHECK(fs::path(res.files_written[3]).filename() == "summary.md");
  CHECK(fs::path(res.files_written[4]).filename() == "report.html");
  for (const auto& e : fs::directory_iterator(t.dir)) CHECK(e.path().extension() != ".tmp");
}

TEST_CASE("report results.csv has one row per run length and metric with n/a reasons") {
  TempDir t;
  build_sweep(t.dir);
  write_report(t.dir.string(), ReportOptions{"auto", false});
  const auto rows = read_csv(t.dir / "results.csv");
  // 8 finished runs x 4 lengths x 3 metrics, the swept key but the seed as a column.
  REQUIRE(rows.size() == 96);
  REQUIRE(rows.front().count("encoding.name") == 1);
  REQUIRE(rows.front().count("train.seed") == 0);
  const auto find = [&](const std::string& run, const std::string& len, const std::string& metric) {
    for (const CsvRow& r : rows)
      if (r.at("run") == run && r.at("eval_len") == len && r.at("metric") == metric) return r;
    FAIL("no results.csv row for " << run << " " << len << " " << metric);
    throw 0;
  };
  const CsvRow l32 = find("encoding.name=learned,train.seed=2", "32", "token_acc");
  CHECK(l32.at("value").empty());
  CHECK_FALSE(l32.at("na_reason").empty());
  CHECK(l32.at("in_distribution") == "false");
  const CsvRow ok = find("encoding.name=learned,train.seed=1", "32", "token_acc");
  CHECK(ok.at("encoding.name") == "learned");
  CHECK(ok.at("seed") == "1");
  CHECK(ok.at("task") == "copy");
  CHECK(ok.at("train_len") == "16");
  CHECK(std::stod(ok.at("value")) == 0.2);
  CHECK(ok.at("na_reason").empty());
  // The group means of summary.csv are the means of these values.
  const auto summary = read_csv(t.dir / "summary.csv");
  const CsvRow& r64 = find_row(summary, "rope", 64, "token_acc");
  double sum = 0;
  for (int seed : {1, 2, 3})
    sum += std::stod(find("encoding.name=rope,train.seed=" + std::to_string(seed), "64", "token_acc").at("value"));
  CHECK(sum / 3 == Approx(std::stod(r64.at("mean"))).epsilon(1e-12));
}

TEST_CASE("report summary.md has the table markers footnotes and unfinished runs") {
  TempDir t;
  build_sweep(t.dir);
  const ReportResult res = write_report(t.dir.string(), ReportOptions{"auto", false});
  const std::string md = slurp(t.dir / "summary.md");
  INFO(md);
  CHECK_THAT(md, Contains("# Sweep report: copy, train_len 16"));
  CHECK_THAT(md, Contains("percent"));
  CHECK_THAT(md, Contains("## token accuracy (%)"));
  CHECK_THAT(md, Contains("## exact match (%)"));
  // Header: swept key, in-distribution lengths starred, the others not.
  CHECK(has_line_containing(md, "| encoding.name ", " 16* |"));
  CHECK(has_line_containing(md, " 8* |", " 64 |"));
  CHECK(!has_line_containing(md, " 32* |", "|"));
  CHECK_THAT(md, Contains("Lengths marked * are in-distribution (≤ train_len 16)"));
  // Rows: rope at 8 = 94.0 ± 4.6 over 3 seeds; learned partial and all-n/a cells.
  CHECK(has_line_containing(md, "| rope ", "94.0 ± 4.6 (3)"));
  CHECK(has_line_containing(md, "| sinusoidal ", " 14.0 ± 4.6 (3) |"));
  CHECK(has_line_containing(md, "| learned ", "20.0 ± 0.0 (1; 1 n/a [1])"));
  CHECK(has_line_containing(md, "| learned ", " n/a [1] |"));
  // One footnote for the reason (the two positions differ only in numbers), given once per table.
  CHECK_THAT(md, Contains("- [1] n/a: encoding 'learned': position"));
  CHECK_THAT(md, !Contains("[2]"));
  // Unfinished runs listed, not errors.
  CHECK_THAT(md, Contains("## Unfinished runs"));
  CHECK(has_line_containing(md, "encoding.name=rope,train.seed=4", "last logged step 0"));
  CHECK(has_line_containing(md, "encoding.name=alibi,train.seed=1", "not started"));
  CHECK_THAT(md, Contains("8 finished run(s) in 3 group(s), 2 unfinished"));
  // The returned table is the main (token accuracy) table only.
  CHECK_THAT(res.table_markdown, Contains("## token accuracy (%)"));
  CHECK_THAT(res.table_markdown, !Contains("exact match"));
  CHECK_THAT(res.table_markdown, Contains("[1] n/a"));
}

TEST_CASE("report metric option picks the main table") {
  TempDir t;
  build_sweep(t.dir);
  ReportOptions opt;
  opt.plots = false;
  opt.metric = "exact_match";
  ReportResult res = write_report(t.dir.string(), opt);
  CHECK_THAT(res.table_markdown, Contains("## exact match (%)"));
  CHECK(has_line_containing(res.table_markdown, "| rope ", "84.0 ± 4.6 (3)"));
  opt.metric = "loss";
  res = write_report(t.dir.string(), opt);
  CHECK_THAT(res.table_markdown, Contains("## loss"));
  CHECK(has_line_containing(res.table_markdown, "| rope ", "0.060 ± 0.046 (3)"));
  opt.metric = "accuracy";
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains("unknown metric 'accuracy'"));
}

TEST_CASE("report of a language-model sweep uses loss") {
  TempDir t;
  for (int seed : {1, 2}) add_run(t.dir, "rope", seed, 1000, true);
  ReportOptions opt;
  opt.plots = false;
  const ReportResult res = write_report(t.dir.string(), opt);
  CHECK_THAT(res.table_markdown, Contains("## loss: lm, train_len 16"));
  CHECK(has_line_containing(res.table_markdown, "| rope ", "| 5.015 ± 0.021 (2) |"));
  const auto rows = read_csv(t.dir / "summary.csv");
  REQUIRE(rows.size() == 8);  // 4 lengths x (loss, token_acc)
  opt.metric = "exact_match";
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains("exact_match is not reported"));
}

TEST_CASE("report writes gnuplot scripts data and PNG plots") {
  TempDir t;
  build_sweep(t.dir);
  const ReportResult res = write_report(t.dir.string());
  const fs::path plots = t.dir / "plots";
  for (const char* f : {"length_generalization.dat", "length_generalization.gp", "training_curves.dat",
                        "training_curves.gp"}) {
    INFO(f);
    CHECK(fs::exists(plots / f));
  }
  const std::string gp = slurp(plots / "length_generalization.gp");
  CHECK_THAT(gp, Contains("filledcurves"));
  CHECK_THAT(gp, Contains("train length"));
  CHECK_THAT(gp, Contains("set arrow from 16"));
  // learned: no point at 64 (n/a omitted) but one at 32.
  const std::string dat = slurp(plots / "length_generalization.dat");
  CHECK_THAT(dat, Contains("# learned\n8 "));
  CHECK_THAT(dat, Contains("\n32 20 0 1 20 20\n"));
  CHECK_THAT(dat, !Contains("\n64 20"));
  CHECK_THAT(slurp(plots / "training_curves.dat"), Contains("# rope\n0 3.04 3\n"));
  if (!have_gnuplot()) {
    WARN("gnuplot not installed: PNG rendering not checked");
    return;
  }
  for (const std::string& w : res.warnings) INFO(w);
  CHECK(res.warnings.empty());
  CHECK(is_png(plots / "length_generalization.png"));
  CHECK(is_png(plots / "training_curves.png"));
  for (const auto& e : fs::directory_iterator(plots)) {
    CHECK(e.path().extension() != ".tmp");
    CHECK(e.path().extension() != ".log");
  }
  const std::string md = slurp(t.dir / "summary.md");
  CHECK_THAT(md, Contains("](plots/length_generalization.png)"));
  CHECK_THAT(md, Contains("](plots/training_curves.png)"));
}

TEST_CASE("report without gnuplot warns and still writes scripts") {
  TempDir t;
  build_sweep(t.dir);
  ReportOptions opt;
  opt.gnuplot = "/nonexistent/gnuplot";
  const ReportResult res = write_report(t.dir.string(), opt);
  REQUIRE(res.warnings.size() == 1);
  CHECK_THAT(res.warnings[0], Contains("gnuplot not found"));
  CHECK(fs::exists(t.dir / "plots" / "length_generalization.gp"));
  CHECK(!fs::exists(t.dir / "plots" / "length_generalization.png"));
  CHECK(fs::exists(t.dir / "summary.md"));
}

TEST_CASE("report errors name the malformed file") {
  TempDir t;
  build_sweep(t.dir);
  const fs::path bad = t.dir / "encoding.name=rope,train.seed=2" / "eval.json";
  ReportOptions opt;
  opt.plots = false;
  write(bad, "{\"label\": \"x\", \"results\": [");
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains(bad.string()) && Contains("invalid JSON"));
  json good = to_json(run_result("rope", 2));
  json j = good;
  j["results"][0]["status"] = "done";
  write(bad, j.dump());
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains(bad.string()) && Contains("results[0].status"));
  j = good;
  j.erase("train_len");
  write(bad, j.dump());
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt),
                    Contains(bad.string()) && Contains("missing key \"train_len\""));
  j = good;
  j["results"][1]["token_acc"] = "high";
  write(bad, j.dump());
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains(bad.string()) && Contains("results[1].token_acc"));
  j = good;
  j["results"][1]["length"] = 8;
  write(bad, j.dump());
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains("length 8 appears twice"));
  // A malformed metrics line of a finished run names file and line.
  add_run(t.dir, "rope", 2);
  const fs::path metrics = t.dir / "encoding.name=rope,train.seed=2" / "metrics.jsonl";
  write(metrics, "{\"step\": 0, \"split\": \"train\", \"loss\": 1.0}\nnot json\n");
  CHECK_THROWS_WITH(write_report(t.dir.string(), opt), Contains(metrics.string()) && Contains("line 2"));
}

TEST_CASE("report of an empty or missing directory is an error") {
  TempDir t;
  CHECK_THROWS_WITH(write_report(t.dir.string()), Contains("no finished runs in " + t.dir.string()));
  fs::create_directories(t.dir / "run1");
  write(t.dir / "run2" / "metrics.jsonl", "{\"step\": 3, \"split\": \"train\"}\n");
  CHECK_THROWS_WITH(write_report(t.dir.string()), Contains("no finished runs") && Contains("2 unfinished"));
  CHECK_THROWS_WITH(write_report((t.dir / "nope").string()), Contains("not a directory"));
  CHECK(!fs::exists(t.dir / "summary.csv"));
}

TEST_CASE("report of a single run directory") {
  TempDir t;
  add_run(t.dir, "rope", 1);
  const fs::path run = t.dir / "encoding.name=rope,train.seed=1";
  ReportOptions opt;
  opt.plots = false;
  const ReportResult res = write_report(run.string(), opt);
  CHECK(has_line_containing(res.table_markdown, "| rope ", "| 90.0 ± 0.0 (1) |"));
  CHECK(fs::exists(run / "summary.csv"));
}

TEST_CASE("eval.json round-trips through to_json and eval_result_from_json") {
  EvalResult a = run_result("learned", 2, 32);
  a.cell = 7;
  a.assignment.emplace_back("train.lr", Value(1e-3));
  a.assignment.emplace_back("task.addition.reverse_digits", Value(true));
  a.results[0].buckets = {{0, 8, 1.25}, {8, 16, 2.5}};
  a.seed = 18446744073709551615ull;  // the largest seed survives
  const json j = to_json(a);
  const EvalResult b = eval_result_from_json(json::parse(j.dump()), "x.json");
  CHECK(to_json(b) == j);
  CHECK(b.cell == a.cell);
  CHECK(b.assignment == a.assignment);  // types survive: 1e-3 stays a number, true a boolean
  CHECK(b.seed == a.seed);
  REQUIRE(b.results.size() == a.results.size());
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    CHECK(b.results[i].ok == a.results[i].ok);
    CHECK(b.results[i].metrics == a.results[i].metrics);
    CHECK(b.results[i].reason == a.results[i].reason);
  }
  CHECK(b.results[0].buckets.size() == 2);
  CHECK(b.results[0].buckets[1].loss == 2.5);
  CHECK_FALSE(b.results.back().metric("token_acc").has_value());  // n/a
  // A plain run has no cell index; a language model no exact match.
  const EvalResult lm = eval_result_from_json(to_json(run_result("rope", 1, 1000, true)), "lm.json");
  CHECK_FALSE(lm.cell.has_value());
  CHECK(lm.results[0].metrics.count("exact_match") == 0);
  CHECK(lm.results[0].metrics.count("loss") == 1);
}

TEST_CASE("legend names of sweep keys stay distinct", "[report]") {
  using report_detail::short_key_names;
  using V = std::vector<std::string>;
  CHECK(short_key_names({"task.name", "encoding.name"}) == V{"task", "encoding"});  // not "name", "name"
  CHECK(short_key_names({"encoding.name", "train.positions"}) == V{"encoding", "positions"});
  CHECK(short_key_names({"attention.scaling", "encoding.rope.scaling"}) ==
        V{"attention.scaling", "encoding.rope.scaling"});  // the same last component: whole keys
  CHECK(short_key_names({"encoding.rope.factor", "train.lr"}) == V{"factor", "lr"});
  CHECK(short_key_names({}).empty());
  // One dash type per value of the first key when there are several keys; solid with one key.
  report_detail::Sweep sw;
  sw.group_keys = {"task.name", "encoding.name"};
  for (const char* task : {"copy", "reverse"})
    for (const char* enc : {"none", "rope"}) sw.groups.push_back({{task, enc}, "", {}});
  REQUIRE(sw.groups.size() == 4);
  CHECK(report_detail::plot_dash_type(sw, 0) == 1);
  CHECK(report_detail::plot_dash_type(sw, 1) == 1);
  CHECK(report_detail::plot_dash_type(sw, 2) == 2);
  CHECK(report_detail::plot_dash_type(sw, 3) == 2);
  sw.group_keys = {"encoding.name"};
  CHECK(report_detail::plot_dash_type(sw, 3) == 1);
}

TEST_CASE("report of real runs follows the grid and shows what the runs wrote", "[e2e]") {
  TempDir t;
  // The grid lists rope before none: rows must follow it, not the alphabet of the directory names.
  const LoadedConfig loaded =
      parse_config(test::tiny_config(20) + "[sweep]\n\"encoding.name\" = [\"rope\", \"none\"]\n", "tiny.toml");
  REQUIRE(loaded.runs.size() == 2);
  for (const RunSpec& spec : loaded.runs) {
    RunOptions ro;
    ro.run_dir = (t.dir / spec.dir_name).string();
    ro.console = false;
    REQUIRE(run_experiment(spec, ro) == 0);
  }
  const EvalResult rope = read_eval_result((t.dir / loaded.runs[0].dir_name / "eval.json").string());
  CHECK(rope.cell == std::optional<std::size_t>(0));
  CHECK(rope.label == "encoding.name=rope");
  REQUIRE(rope.results.size() == 3);
  CHECK(rope.results[2].metrics.count("exact_match") == 1);

  ReportOptions opt;
  opt.plots = false;
  const ReportResult res = write_report(t.dir.string(), opt);
  const std::string md = res.table_markdown;
  INFO(md);
  REQUIRE(md.find("| rope ") != std::string::npos);
  REQUIRE(md.find("| none ") != std::string::npos);
  CHECK(md.find("| rope ") < md.find("| none "));
  // The rope row's value at length 8 is the run's own token accuracy, in percent, n = 1.
  char cell[64];
  std::snprintf(cell, sizeof cell, "%.1f ± 0.0 (1) |", 100 * *rope.results[2].metric("token_acc"));
  CHECK(has_line_containing(md, "| rope ", cell));
  const auto rows = read_csv(t.dir / "summary.csv");
  const CsvRow& r8 = find_row(rows, "rope", 8, "exact_match");
  CHECK(std::stod(r8.at("mean")) == Approx(*rope.results[2].metric("exact_match")).epsilon(1e-9));
}
