// `pelab report`: summary tables (CSV + markdown) and gnuplot plots of a sweep directory.
//
// SWEEP/ holds one subdirectory per sweep cell. A finished run has eval.json (experiments/eval_result.hpp:
// per-length results, its cell index and assignment) and metrics.jsonl (training log); a run without
// eval.json is listed as unfinished, not an error. Rows follow the grid (the cell indices the runs
// wrote). Runs are grouped by their sweep assignment minus the seed key ("train.seed"), so each group's
// numbers are a mean ± sample std over seeds. Writes SWEEP/summary.csv, SWEEP/summary.md and
// SWEEP/plots/*. A directory that itself holds eval.json is reported as a sweep of that one run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/eval_result.hpp"

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

// Throws Error when SWEEP is not a directory, has no finished run, or an eval.json / metrics.jsonl is
// malformed (the message names the file).
ReportResult write_report(const std::string& sweep_dir, const ReportOptions& opt = {});

// ---- internals shared by report.cpp, report_table.cpp and report_plot.cpp ----
namespace report_detail {

struct Run : EvalResult {
  std::string dir_name;
  std::vector<std::pair<long, double>> train_loss;  // (step, loss) from metrics.jsonl, split "train"
};

struct Unfinished {
  std::string dir_name, status;  // e.g. "not started", "unfinished (last logged step 400)"
};

struct Group {
  std::vector<std::string> values;  // formatted, aligned with Sweep::group_keys ("" when absent)
  std::string label;                // short legend / row label
  std::vector<const Run*> runs;
};

struct Sweep {
  std::string dir;
  std::vector<Run> runs;  // finished, in grid order (then natural order of directory name)
  std::vector<Unfinished> unfinished;
  std::vector<std::string> group_keys;  // swept keys minus the seed key, first-seen order
  std::vector<Group> groups;            // first-appearance order
  std::vector<std::size_t> lengths;     // every eval length, ascending
  bool any_lm = false, any_seq = false;
};

// Mean ± sample std of one metric over a group's runs at one eval length.
struct CellStats {
  bool present = false;  // some run of the group evaluated this length
  bool in_distribution = false;
  double mean = 0, std = 0;
  int n = 0, n_na = 0;   // runs with a value / runs reporting n/a
  std::string reason;    // first n/a reason
};
CellStats cell_stats(const Group& g, std::size_t length, const std::string& metric);


// report_table.cpp
std::string summary_csv(const Sweep& s, const std::vector<std::string>& metrics);
// Markdown table of one metric plus its footnotes (in-distribution marker, n/a reasons).
std::string metric_table(const Sweep& s, const std::string& metric);
std::string title_line(const Sweep& s);  // "copy, train_len 16"

// report_plot.cpp: writes plots/*.dat, *.gp and renders them; returns the PNGs produced.
std::vector<std::string> write_plots(const Sweep& s, const std::string& metric, const ReportOptions& opt,
                                     ReportResult& out);

}  // namespace report_detail
}  // namespace pelab
