// The report's plots of the lengths beyond training over training steps (metrics.jsonl "beyond"), on runs
// with known numbers: the per-group curves (mean ± std, a stopped run carried forward, the final
// evaluation's point for a run that ran to its limit), the metric and the budget policy stated, the
// report.html section; runs written before "beyond" existed still load and report; malformed records
// are errors naming the file and line.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "experiments/report/report.hpp"
#include "experiments/report/report_detail.hpp"
#include "report_fixture.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;
namespace rd = pelab::report_detail;

namespace {

const std::vector<std::size_t> kLens = {8, 16, 32, 64};
const std::string kTrainLine = "{\"step\":50,\"split\":\"train\",\"length\":null,\"loss\":1.5}\n";
using Beyond = std::map<std::size_t, double>;  // token_acc per length above train_len; absent = n/a

// One held-out record at train_len 16 as the trainer writes it, with its "beyond" list.
std::string held_out_line(long step, double acc, const Beyond& beyond) {
  using json = nlohmann::ordered_json;
  json j = {{"step", step}, {"split", "eval"},         {"length", 16},  {"loss", 1 - acc}, {"token_acc", acc},
            {"exact_match", acc / 2}, {"lr", nullptr}, {"grad_norm", nullptr}, {"tokens_per_s", nullptr}, {"time", 1.5}};
  json b = json::array();
  for (std::size_t len : {32, 64}) {
    auto it = beyond.find(len);
    if (it == beyond.end()) {
      b.push_back({{"length", len}, {"samples", 0}, {"loss", nullptr}, {"token_acc", nullptr}, {"exact_match", nullptr}});
    } else {
      b.push_back({{"length", len}, {"samples", 64}, {"loss", 1 - it->second}, {"token_acc", it->second},
                   {"exact_match", it->second / 2}});
    }
  }
  j["beyond"] = b;
  return j.dump() + "\n";
}

// The final evaluation's records at `step`, one per length (as run.cpp writes them).
std::string final_lines(long step, const std::map<std::size_t, double>& acc) {
  std::string out;
  for (const auto& [len, a] : acc)
    out += nlohmann::ordered_json({{"step", step}, {"split", "eval"}, {"length", len}, {"loss", 1 - a},
                                   {"token_acc", a}, {"exact_match", a / 2}, {"time", 2.0}})
               .dump() +
           "\n";
  return out;
}

// rope x 2 seeds under first fit (token_acc >= 90%, at most 600 steps): seed 1 stops at 200, seed 2 at
// 300, n/a at 64 once; none x 1 seed under a fixed budget of 300 steps, tracking 32 only, its last point
// from the final evaluation at 300; learned x 1 seed, n/a at every length beyond training.
void build_sweep(const fs::path& dir) {
  FakeRun r;
  r.acc = {{8, 1.0}, {16, 0.95}, {32, 0.5}, {64, 0.25}};
  r.seed = 1;
  write_fake_run(dir, r, kLens);
  write(dir / r.dir_name() / "metrics.jsonl",
        kTrainLine + held_out_line(100, 0.5, {{32, 0.4}, {64, 0.2}}) + held_out_line(200, 0.9, {{32, 0.6}}) +
            final_lines(200, {{8, 1.0}, {16, 0.9}, {32, 0.61}, {64, 0.3}}));
  r.seed = 2;
  write_fake_run(dir, r, kLens);
  write(dir / r.dir_name() / "metrics.jsonl",
        kTrainLine + held_out_line(100, 0.3, {{32, 0.2}, {64, 0.1}}) + held_out_line(200, 0.6, {{32, 0.3}, {64, 0.15}}) +
            held_out_line(300, 0.95, {{32, 0.5}, {64, 0.25}}) + final_lines(300, {{16, 0.95}, {32, 0.5}}));
  FakeRun n = r;
  n.encoding = "none";
  n.seed = 1;
  n.config = "[train]\nsteps = 300\neval_every = 100\n";
  write_fake_run(dir, n, kLens);
  std::string m = held_out_line(100, 0.7, {{32, 0.5}}) + held_out_line(200, 0.9, {{32, 0.55}});
  m.replace(m.find("\"beyond\":["), 10, "\"beyond\":[{\"length\":48,\"samples\":0,\"token_acc\":null},");
  write(dir / n.dir_name() / "metrics.jsonl", kTrainLine + m + final_lines(300, {{8, 1.0}, {16, 0.97}, {32, 0.58}, {64, 0.3}}));
  FakeRun l = r;  // a table of 16 rows: nothing beyond training is evaluated, so no plot
  l.encoding = "learned";
  l.acc = {{8, 1.0}, {16, 0.95}};
  write_fake_run(dir, l, kLens);
  write(dir / l.dir_name() / "metrics.jsonl", kTrainLine + held_out_line(100, 0.5, {}) + held_out_line(200, 0.95, {}));
}

// "step mean std n n_carried " of a curve line over `xs` (fractions; percent in the file).
std::string curve_line(long step, std::vector<double> xs, int carried) {
  double mean = 0;
  for (double& x : xs) mean += (x = 100 * x);
  mean /= static_cast<double>(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  const double sd = xs.size() > 1 ? std::sqrt(ss / static_cast<double>(xs.size() - 1)) : 0.0;
  return "\n" + std::to_string(step) + " " + rd::gp_num(mean) + " " + rd::gp_num(sd) + " " +
         std::to_string(xs.size()) + " " + std::to_string(carried) + " ";
}

// The data block of one length in a plot's .dat ("" when absent).
std::string block(const std::string& dat, const std::string& header) {
  const std::size_t at = dat.find(header + "\n");
  if (at == std::string::npos) return "";
  return dat.substr(at, dat.find("\n\n", at) - at);
}

ReportOptions scripts_only() {
  ReportOptions o;
  o.gnuplot = "/nonexistent/gnuplot";  // the data and scripts are what is checked
  return o;
}

}  // namespace

TEST_CASE("report beyond curves: per group, each length beyond training against the step, over seeds",
          "[report][beyond]") {
  TempDir t;
  build_sweep(t.dir);
  write_report(t.dir.string(), scripts_only());
  const fs::path plots = t.dir / "plots";
  REQUIRE(fs::exists(plots / "beyond_3_rope.dat"));
  REQUIRE(fs::exists(plots / "beyond_2_none.dat"));
  const std::string rope = slurp(plots / "beyond_3_rope.dat");
  INFO(rope);
  // The training length: as the held-out curve (seed 1 carried from 200).
  const std::string at16 = block(rope, "# length 16 (training)");
  CHECK_THAT(at16, Contains(curve_line(100, {0.5, 0.3}, 0)));
  CHECK_THAT(at16, Contains(curve_line(300, {0.9, 0.95}, 1)));
  // 32: the "beyond" values, seed 1's 60% carried to 300 (its final evaluation at 200 repeats a
  // periodic step: the periodic record's value stays).
  const std::string at32 = block(rope, "# length 32");
  CHECK_THAT(at32, Contains(curve_line(100, {0.4, 0.2}, 0)));
  CHECK_THAT(at32, Contains(curve_line(200, {0.6, 0.3}, 0)));
  CHECK_THAT(at32, Contains(curve_line(300, {0.6, 0.5}, 1)));
  CHECK(count_of(at32, "\n") == 3);  // the header and three steps
  // 64: n/a for seed 1 at 200, so its series ends at 100 and is carried from there.
  const std::string at64 = block(rope, "# length 64");
  CHECK_THAT(at64, Contains(curve_line(200, {0.2, 0.15}, 1)));
  CHECK_THAT(at64, Contains(curve_line(300, {0.2, 0.25}, 1)));

  // A run that ran to its step limit ends at its final evaluation, at the lengths it tracked only.
  const std::string none = slurp(plots / "beyond_2_none.dat");
  INFO(none);
  CHECK_THAT(block(none, "# length 32"), Contains(curve_line(300, {0.58}, 0)));
  CHECK(block(none, "# length 64").empty());
  CHECK(block(none, "# length 48").empty());  // samples 0: not evaluated
  CHECK_THAT(block(none, "# length 16 (training)"), Contains(curve_line(300, {0.97}, 0)));

  // The metric on the axis and in the title, the budget policy stated, the stops marked.
  const std::string gp = slurp(plots / "beyond_3_rope.gp");
  INFO(gp);
  CHECK_THAT(gp, Contains("set ylabel \"held-out token accuracy (%)\""));
  // The title wrapped to the 640 px panel (at most 64 bytes a line).
  CHECK_THAT(gp, Contains("copy: rope: held-out token accuracy (%) during training, per\\neval length (mean ± std "
                          "over 2 run(s)); budget: first fit (a\\nrun stops at its first held-out evaluation with "
                          "token_acc ≥\\n90%; at most 600 steps)"));
  // Every group's panel spans the same steps: 0 to the sweep's last held-out evaluation (300).
  CHECK_THAT(gp, Contains("set xrange [0:300]\n"));
  CHECK_THAT(slurp(plots / "beyond_2_none.gp"), Contains("set xrange [0:300]\n"));
  CHECK_THAT(gp, Contains("set arrow from 200, graph 0 to 200, graph 1"));
  CHECK_THAT(gp, Contains("set arrow from 300, graph 0 to 300, graph 1"));
  CHECK_THAT(gp, Contains("title \"length 64\""));
  CHECK_THAT(gp, Contains("title \"length 16 (training)\""));
  CHECK_THAT(slurp(plots / "beyond_2_none.gp"), Contains("budget: fixed budget (300 steps)"));
}

TEST_CASE("report beyond curves: rendered into summary.md and a report.html section of their own",
          "[report][beyond]") {
  if (!have_gnuplot()) {
    WARN("gnuplot not installed: PNG rendering not checked");
    return;
  }
  TempDir t;
  build_sweep(t.dir);
  const ReportResult res = write_report(t.dir.string(), ReportOptions());
  std::string warnings;
  for (const std::string& w : res.warnings) warnings += w + "\n";
  INFO(warnings);
  CHECK(warnings.empty());
  CHECK(is_png(t.dir / "plots" / "beyond_3_rope.png"));
  CHECK(is_png(t.dir / "plots" / "beyond_2_none.png"));
  const std::string md = slurp(t.dir / "summary.md");
  CHECK_THAT(md, Contains("- [beyond_3_rope.png](plots/beyond_3_rope.png) (script: `plots/beyond_3_rope.gp`): rope: "
                          "held-out token accuracy (%) during training at the training length (black) and at each "
                          "eval length above it (64 held-out examples per length, [eval] beyond_samples)"));
  CHECK_THAT(md, Contains("Budget: first fit (a run stops at its first held-out evaluation with token_acc ≥ 90%; at "
                          "most 600 steps)."));
  const std::string html = slurp(t.dir / "report.html");
  const std::size_t section = html.find("<h3 id=\"beyond\">Beyond the training length, during training</h3>");
  REQUIRE(section != std::string::npos);
  CHECK(html.find("<figure id=\"plot-beyond_3_rope\">", section) != std::string::npos);
  CHECK(html.find("<figure id=\"plot-beyond_2_none\">", section) != std::string::npos);
  // Two to a row, each shown at the width its text was sized for: 640 px wide, 11 pt, so >= 11 px on the page.
  CHECK(html.find("grid-template-columns: repeat(2, minmax(0, 1fr))", section) != std::string::npos);
  const std::size_t fig = html.find("<figure id=\"plot-beyond_3_rope\">", section);
  CHECK(html.find(" width=\"640\">", fig) < html.find("</figure>", fig));
  CHECK_THAT(slurp(t.dir / "plots" / "beyond_3_rope.gp"), Contains("size 640,460 noenhanced font \"sans,11\""));
  CHECK(html.find("<h2 id=\"training\">") < section);
  CHECK(html.find("Not drawn for learned: no length beyond training has values", section) != std::string::npos);
  CHECK_FALSE(fs::exists(t.dir / "plots" / "beyond_1_learned.dat"));
}

TEST_CASE("report of runs written before beyond existed: the same tables, no beyond plot, a note why",
          "[report][beyond]") {
  TempDir t;
  for (int seed : {1, 2}) {
    FakeRun r;
    r.seed = seed;
    r.acc = {{8, 1.0}, {16, 0.95}, {32, 0.5}, {64, 0.25}};
    r.held_out = {{100, 0.5}, {200, 0.95}};
    write_fake_run(t.dir, r, kLens);
    // The final evaluation's records at every length, as older runs wrote them too.
    const fs::path m = t.dir / r.dir_name() / "metrics.jsonl";
    write(m, slurp(m) + final_lines(200, {{8, 1.0}, {16, 0.95}, {32, 0.5}, {64, 0.25}}));
  }
  const ReportResult res = write_report(t.dir.string(), scripts_only());
  CHECK(fs::exists(t.dir / "plots" / "held_out_curves.dat"));
  for (const auto& e : fs::directory_iterator(t.dir / "plots"))
    CHECK(e.path().filename().string().rfind("beyond_", 0) == std::string::npos);
  CHECK(md_row(slurp(t.dir / "summary.md"), "## token accuracy", "rope") ==
        Cells{"rope", "100.0 ± 0.0 (2)", "95.0 ± 0.0 (2)", "50.0 ± 0.0 (2)", "25.0 ± 0.0 (2)"});
  CHECK_THAT(slurp(t.dir / "report.html"),
             Contains("No plot: no length beyond training has values at two or more held-out evaluations"));
  const rd::Sweep s = rd::load_sweep(t.dir.string());
  for (const rd::Run& r : s.runs) {
    CHECK(r.beyond_samples == 0);
    for (const rd::HeldOut& h : r.held_out) CHECK(h.beyond.empty());
  }
}

TEST_CASE("report: a malformed beyond list names the file, the line and what is expected", "[report][beyond]") {
  TempDir t;
  FakeRun r;
  r.acc = {{8, 1.0}, {16, 0.95}};
  write_fake_run(t.dir, r, {8, 16});
  const fs::path m = t.dir / r.dir_name() / "metrics.jsonl";
  auto error_of = [&](const std::string& beyond) {
    write(m, "{\"step\":10,\"split\":\"train\",\"loss\":1.0}\n{\"step\":100,\"split\":\"eval\",\"length\":16,"
             "\"token_acc\":0.5,\"beyond\":" + beyond + "}\n");
    try {
      write_report(t.dir.string(), scripts_only());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of("[]") == "(no error)");
  CHECK(error_of("null") == "(no error)");
  CHECK_THAT(error_of("5"), Contains(m.string() + ": line 2.beyond: expected an array, got 5"));
  CHECK_THAT(error_of("[7]"), Contains(m.string() + ": line 2.beyond[0]: expected an object, got 7"));
  CHECK_THAT(error_of("[{\"samples\":64}]"), Contains(m.string() + ": line 2.beyond[0]: missing key \"length\""));
  CHECK_THAT(error_of("[{\"length\":32,\"samples\":64,\"token_acc\":\"x\"}]"),
             Contains(m.string() + ": line 2.beyond[0].token_acc: expected a number or null, got \"x\""));
}

TEST_CASE("report budget policy: first fit, fixed, mixed, unknown", "[report][beyond]") {
  auto run = [](bool known, const std::string& metric, std::size_t eval_every, std::size_t steps) {
    rd::Run r;
    r.settings.known = known;
    r.settings.early_stop_metric = metric;
    r.settings.early_stop_target = 0.99;
    r.settings.eval_every = eval_every;
    r.settings.steps = steps;
    return r;
  };
  const rd::Run fit = run(true, "token_acc", 250, 4000), fixed = run(true, "", 250, 2000),
                never = run(true, "token_acc", 0, 2000), unknown = run(false, "", 0, 0);
  CHECK(rd::budget_policy_text({&fit, &fit}) ==
        "first fit (a run stops at its first held-out evaluation with token_acc ≥ 99%; at most 4000 steps)");
  CHECK(rd::budget_policy_text({&fixed}) == "fixed budget (2000 steps)");
  CHECK(rd::budget_policy_text({&never}) == "fixed budget (2000 steps)");  // no evaluation to stop at
  CHECK(rd::budget_policy_text({&fit, &fixed}) ==
        "mixed: first fit (a run stops at its first held-out evaluation with token_acc ≥ 99%; at most 4000 steps), "
        "fixed budget (2000 steps)");
  CHECK(rd::budget_policy_text({&unknown}) == "unknown (no config.toml)");
  CHECK(rd::budget_policy_text({&fixed, &unknown}) == "fixed budget (2000 steps); 1 run(s) without config.toml");
}
