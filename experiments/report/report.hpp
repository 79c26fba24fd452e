// `pelab report`: summary tables (CSV + markdown), gnuplot plots and one self-contained HTML page for a
// sweep directory.
//
// SWEEP/ holds one subdirectory per sweep cell. A finished run has eval.json (experiments/eval/eval_result.hpp:
// per-length results, its cell index and assignment) and metrics.jsonl (training log); a run without
// eval.json is listed as unfinished, not an error. Rows follow the grid (the cell indices the runs
// wrote). Runs are grouped by their sweep assignment minus the seed key ("train.seed"), so each group's
// numbers are a mean ± sample std over seeds. A directory that itself holds eval.json is reported as a
// sweep of that one run.
//
// Writes SWEEP/summary.csv (every metric per group and length, full double precision, with the chance
// level), SWEEP/steps_to_target.csv (per run), SWEEP/results.csv (every run, length and metric: the
// long table below), SWEEP/summary.md, SWEEP/plots/* and SWEEP/report.html.
// What the tables and plots show (steps to target, held-out curves, chance, ranks) is defined in
// experiments/report/report_detail.hpp and docs/reports.md, "Reports".
//
// Probes: a run directory may hold RUN/probe/NAME.png (a plot) with optional RUN/probe/NAME.json (its
// numbers; a top-level string "title" is used as the caption) and RUN/probe/NAME.csv. The report shows
// each probe NAME side by side across groups (one run per group: its first run in grid order that has
// probes); runs without a probe/ directory are simply left out of that section.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/params/value.hpp"

namespace pelab {

struct ReportOptions {
  // "auto": the headline metric of the task kinds present (token_acc for sequence tasks, loss for LM),
  // or a metric's name (training/metrics_table.hpp).
  std::string metric = "auto";
  bool plots = true;
  std::string gnuplot = "gnuplot";  // program rendering the plots (PATH lookup); missing -> warning
};

struct ReportResult {
  std::string table_markdown;               // the main table (chosen metric) with its footnotes
  std::vector<std::string> files_written;   // paths, in the order written
  std::vector<std::string> warnings;        // e.g. gnuplot missing or failing
};

// Throws Error when SWEEP is not a directory, has no finished run, or an eval.json / metrics.jsonl /
// config.toml is malformed (the message names the file).
ReportResult write_report(const std::string& sweep_dir, const ReportOptions& opt = {});

// One row of results.csv: one metric of one run (or named re-evaluation) at one eval length, or at one
// [eval] operand_grid cell (len_a, len_b set; eval_len the longer).
struct ResultRow {
  std::string run;                         // the run's directory, relative to the sweep directory
  std::vector<std::optional<Value>> keys;  // per ResultsTable::keys, the run's value (nullopt: not set)
  std::uint64_t seed = 0;
  std::string task;
  std::size_t train_len = 0, eval_len = 0;
  std::optional<std::size_t> len_a, len_b;  // operand_grid rows only
  bool in_distribution = false;
  std::string metric;
  std::optional<double> value;   // nullopt: n/a at this length
  std::optional<double> chance;  // the metric's chance level (sequence tasks' token_acc, exact_match)
  std::string na_reason;         // why n/a; "" when there is a value
};

// The long table of results.csv, which pandas reads as it is (pelab.results() in Python gives the same
// rows): columns run, every swept key but the seed (the report's grouping keys, "eval" for named
// re-evaluations), seed, task, train_len, eval_len, len_a, len_b, in_distribution, metric, value, chance,
// na_reason. Rows follow the runs in grid order, then their eval lengths, then their operand_grid cells
// (len_a, len_b filled in; empty in the other rows), then the metrics as summary.csv lists them.
struct ResultsTable {
  std::vector<std::string> keys;
  std::vector<ResultRow> rows;
};
// Throws Error as write_report does.
ResultsTable results_table(const std::string& sweep_dir);
// The table as CSV: doubles with 17 significant digits (they read back bit-exact), booleans true/false,
// an empty field for a missing value.
std::string results_csv(const ResultsTable& t);

}  // namespace pelab
