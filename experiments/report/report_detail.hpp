// Internals of `pelab report` shared by its files:
//   report.cpp          write_report: the files, in order
//   report_load.cpp     reading a sweep directory (eval.json, metrics.jsonl, config.toml, probe/)
//   report_table.cpp    summary.csv and the per-length metric tables (with chance rows)
//   report_results.cpp  results.csv, the long table (report.hpp)
//   report_research.cpp steps to target, ranks / mean reciprocal rank
//   report_markdown.cpp tables as markdown
//   report_html.cpp     report.html
//   report_gnuplot.cpp  running gnuplot; report_plot.cpp: length and training plots;
//   report_plot_curves.cpp: held-out curves and LM loss per position; report_plot_beyond.cpp: the lengths
//   beyond training against the step, per group; report_plot_grid.cpp: operand-length heatmaps, per group
//
// Definitions the tables and plots use (also in docs/reports.md):
// - Held-out evaluations of a run: its metrics.jsonl records with split "eval" at length == train_len
//   (the periodic evaluations every [train] eval_every steps, and the final one), one per step.
// - Steps to target of a run: the first held-out evaluation step whose early-stop metric
//   ([train] early_stop_metric) reaches early_stop_target. A group's value is the mean ± sample std over
//   its runs that reached it; runs that never did are not averaged, they are counted ("2/3 reached").
// - Held-out curve of a group: at every step some run evaluated, the mean (band: ± sample std) over all
//   its runs, a run that has stopped counting at its last held-out value (carried forward); each run's
//   last evaluation is marked.
// - Curves beyond the training length of a group: per eval length above train_len, as the held-out curve,
//   from the held-out evaluations' "beyond" records (HeldOut::beyond); drawn when some length has two steps.
// - Rank (sweeps over several tasks): per task, groups ordered by their score, the mean over the task's
//   out-of-distribution eval lengths of the group's mean metric; a group n/a at any of those lengths has
//   no score and ranks after every scored one; equal scores share the average of their ranks. A row's
//   MRR is the mean over the tasks it ran of 1 / rank.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "experiments/eval/eval_result.hpp"
#include "experiments/report/report.hpp"
#include "training/metrics_table.hpp"  // MetricSpec

namespace pelab {
namespace report_detail {

constexpr const char* kSeedKey = "train.seed";
constexpr const char* kTaskKey = "task.name";
constexpr const char* kProbeDir = "probe";  // RUN/probe/NAME.png (+ NAME.json, NAME.csv)

// The [train] settings of a run's config.toml the report needs; known = false without config.toml.
struct RunSettings {
  bool known = false;
  std::size_t steps = 0, eval_every = 0;
  std::string early_stop_metric;  // "" = none
  double early_stop_target = 0;
  // The architecture features beside the encoding (issue 46), as labels show them after its name:
  // " + QK-norm on,off", " + Canon ABCD", " + Canon BD (kernel 3, no residual)"; "" when none.
  std::string features;
};

struct HeldOut {
  long step = 0;
  MetricValues metrics;
  // The eval lengths above train_len measured at this step: the record's "beyond" (a small sample,
  // [eval] beyond_samples), or at a step without one (the final evaluation after the last periodic one)
  // the final evaluation's records at the lengths the run tracked. Lengths not evaluated are absent.
  std::map<std::size_t, MetricValues> beyond;
  bool beyond_recorded = false;  // the record had "beyond"
};

struct ProbeFile {
  std::string name;        // NAME (the PNG's stem)
  std::string png;         // path relative to the sweep directory
  std::string json, csv;   // relative paths, "" when absent
  std::string title;       // the JSON's "title", else NAME
};

struct Run : EvalResult {
  std::string dir_name;
  std::string rel_dir;                              // relative to the sweep directory ("" for a lone run)
  std::vector<std::pair<long, double>> train_loss;  // (step, loss) from metrics.jsonl, split "train"
  std::vector<HeldOut> held_out;                    // ascending step, see above
  std::size_t beyond_samples = 0;                   // examples per length of its "beyond" records (0: none)
  std::string config_toml;                          // the run's config.toml, verbatim ("" when absent)
  RunSettings settings;
  std::vector<ProbeFile> probes;                    // natural order of NAME
  std::vector<std::string> files;                   // log / data files present, relative paths
};

struct Unfinished {
  std::string dir_name, status;  // e.g. "not started", "unfinished (last logged step 400)"
  std::string rel_dir, config_toml;
  std::vector<std::string> files;
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
  std::vector<std::string> tasks;       // distinct tasks, first-seen order
  bool any_lm = false, any_seq = false;
};

// report_load.cpp. Throws Error as write_report documents.
Sweep load_sweep(const std::string& sweep_dir);
bool natural_less(const std::string& a, const std::string& b);
// Legend names of sweep keys: "train.seed" -> "seed", "task.name" -> "task" (a key ending in "name" is
// named by its section), the whole key where two names would read the same.
std::vector<std::string> short_key_names(const std::vector<std::string>& keys);

// Mean ± sample std of one metric over a group's runs at one eval length.
struct CellStats {
  bool present = false;  // some run of the group evaluated this length
  bool in_distribution = false;
  double mean = 0, std = 0;
  int n = 0, n_na = 0;   // runs with a value / runs reporting n/a
  std::string reason;    // first n/a reason
  std::optional<double> chance;  // the chance level of the metric at this length (first run's)
};
CellStats cell_stats(const Group& g, std::size_t length, const std::string& metric);
// The mean and sample std (0 for a single value) of non-empty xs, as every table of the report shows them.
struct MeanStd {
  double mean = 0, std = 0;
};
MeanStd mean_std(const std::vector<double>& xs);
// The report's "mean ± std (count)" cell, each number written by `number` (value_text for a metric's
// values); without " (count)" when count is empty.
std::string mean_std_cell(const MeanStd& m, const std::function<std::string(double)>& number,
                          const std::string& count = "");

// A rendered-independent table: markdown (summary.md) and HTML (report.html) draw the same data.
struct Table {
  std::string id;                   // HTML anchor: "metric-token_acc"
  std::string title;                // "token accuracy (%): copy, train_len 16"
  std::size_t n_left = 0;           // leading label columns (left-aligned); the rest right-aligned
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> reference;      // per row: a reference line (chance), not a result
  std::vector<std::string> notes;   // sentences after the table
  std::vector<std::string> footnotes;  // "[k] text", numbered from 1
};

// report_table.cpp
std::string summary_csv(const Sweep& s, const std::vector<std::string>& metrics);
std::string title_line(const Sweep& s);  // "copy, train_len 16"
std::string train_len_text(const Sweep& s);  // "16" or "16..32"
std::string value_text(double x, const std::string& metric);  // percent with one decimal, losses readable
std::string csv_field(const std::string& s);
std::string full_precision(double x);  // round-trips: %.17g
// The chance levels of a metric per Sweep::lengths: one line when every group shares them, else one per
// distinct series ("chance (copy)", or named by its groups). Empty for metrics without chance (loss).
struct ChanceLine {
  std::string label;
  std::vector<std::optional<double>> at;
};
std::vector<ChanceLine> chance_lines(const Sweep& s, const std::string& metric);
// One metric per group and length (in-distribution marker, n/a footnotes, chance rows), at the
// table_lengths: with many lengths (a length_range) a selection; summary.csv, results.csv and the plot
// keep every length.
Table length_table(const Sweep& s, const std::string& metric);
constexpr std::size_t kTableLengths = 12;  // the most length columns a table shows
// Every length when there are at most kTableLengths; else the first and last, each run's training
// length (when evaluated) and the lengths nearest to round, evenly spaced points (multiples of 1, 2 or
// 5 x 10^k), at most kTableLengths in all.
std::vector<std::size_t> table_lengths(const Sweep& s);
// "8, 16, 32" up to kTableLengths lengths, else "41...500 (460)".
std::string length_list_text(const std::vector<std::size_t>& lengths);
// report_ood.cpp: per group, each run's OOD score (mean over lengths above training) as mean ± std,
// min and max over seeds; nullopt when no run evaluated beyond its training length.
std::optional<Table> ood_table(const Sweep& s, const std::string& metric);

// Seed-level statistics of a score: mean (nullopt: no run has one), sample std (0 for one seed), runs.
struct SeedStats {
  std::optional<double> mean;
  double std = 0;
  int n = 0;
};
// Each run's OOD score of `metric` (as ood_table) over the group's seeds.
SeedStats ood_seed_stats(const Group& g, const std::string& metric);

// report_headline.cpp: the answer first. The tie rule of the recipe pages (python/pelab/reproduce/stats.py
// separated / tie_ranks, ported; tests/scripts/tie_rule_cases.json holds both to the same answers):
// a above b when both have >= 2 seeds and mean_a - std_a > mean_b + std_b.
bool separated(const SeedStats& a, const SeedStats& b);
// Indices of `stats` best (highest mean) first, chained into groups whose neighbours the seeds do not
// separate; no mean: one last group.
std::vector<std::vector<std::size_t>> tie_groups(const std::vector<SeedStats>& stats);
// Per task (or one for the sweep): which group is best beyond training on `metric`, by how much over the
// next, and whether that order is a tie; empty when no group has a score beyond training.
std::vector<std::string> headline(const Sweep& s, const std::string& metric);
std::string tie_rule_text();

// report_results.cpp: the long table of `metrics` (as summary.csv lists them) of every run.
ResultsTable results_table(const Sweep& s, const std::vector<std::string>& metrics);

// report_research.cpp
struct TargetResult {
  bool has_target = false;  // the run's config names an early-stop metric
  std::string metric;
  double target = 0;
  std::optional<long> step;  // first held-out evaluation step reaching it
};
TargetResult steps_to_target(const Run& r);
std::string target_text(const std::string& metric, double target);  // "token_acc ≥ 99%"
// nullopt when no run has an early-stop target.
std::optional<Table> steps_table(const Sweep& s);
std::string steps_csv(const Sweep& s);
// Ranks per task and MRR; nullopt unless the sweep spans several tasks with at least two rows each.
std::optional<Table> rank_table(const Sweep& s, const std::string& metric);
// Average ranks (1 = best) of `scores` (nullopt = unscored: after every scored one).
std::vector<double> average_ranks(const std::vector<std::optional<double>>& scores, bool lower_is_better);

// report_markdown.cpp
std::string markdown(const Table& t);

// report_html.cpp
struct Figure {
  std::string name;     // plots/NAME.png
  std::string png;      // path of the rendered PNG; "" when not rendered
  std::string caption;
};
std::string base64(const std::string& bytes);
std::string html_escape(const std::string& s);
std::string url_path(const std::string& rel);  // percent-encodes a relative path for an href
struct HtmlInput {
  std::vector<std::string> headline;  // headline(): shown first, above the main plot
  std::vector<Table> metric_tables;  // chosen metric first
  // Tables of metrics that read 0 for every group beyond training: collapsed, below the others.
  std::vector<Table> zero_tables;
  std::optional<Table> steps;
  std::vector<Table> ranks;
  std::vector<Figure> figures;       // in order
  std::vector<std::string> beyond_undrawn;  // groups without a beyond_* plot (beyond_plots)
};
std::string report_html(const Sweep& s, const HtmlInput& in, std::vector<std::string>& warnings);

// report_gnuplot.cpp
struct Script {
  std::string name, dat, gp;  // plots/NAME.dat, plots/NAME.gp -> plots/NAME.png
  std::string caption;        // what the plot shows (summary.md, report.html)
};
std::string gp_string(const std::string& s);
std::string gp_num(double x);
// A gnuplot string of several lines: `text` broken at spaces into lines of at most `width` bytes, joined by
// gnuplot's own "\n" (titles that fit a narrow plot).
std::string gp_wrapped(const std::string& text, std::size_t width);
std::string plot_color(std::size_t i);
int plot_point_type(std::size_t i);
// Dash type of group g's line: 1 (solid) for every group when the sweep has one key; with several keys,
// one dash type per value of the first (e.g. solid for copy, dashed for reverse), so that groups that
// share a colour (the palette repeats every 10) stay apart.
int plot_dash_type(const Sweep& s, std::size_t g);
// Readable plots (issue #43): the page shows a PNG W px wide at shown_width(W) px (report.html sets the
// <img> width): full width (at most 1100) above kHalfShownMax, else two to a row (at most 640). Its scripts set
// the font to plot_font_pt(W) = ceil(11 W / shown) pt, so text reads at least kMinTextPx px on the page
// (a lower bound: pngcairo draws a point as 4/3 px). No script sets a smaller font anywhere.
constexpr int kMinTextPx = 11, kFullShownWidth = 1100, kHalfShownWidth = 640, kHalfShownMax = 1000;
int shown_width(int png_width);
int plot_font_pt(int png_width);
struct PlotSize {
  int width = 1100, height = 620;
};
constexpr PlotSize kPanelPlot{640, 460};  // two to a row (beyond_*, operand_grid_*)
constexpr std::size_t kMaxLines = 8;  // more lines than this in one plot are split into panels
// The terminal lines of a script: pngcairo (else png) of that size with plot_font_pt's font.
std::string plot_terminal(int width, int height);
// The characters a title line of a PNG `png_width` px wide holds in plot_font_pt's font (a glyph taken as
// 0.6 em, an em as 4/3 px a point: conservative for DejaVu Sans).
inline std::size_t title_chars(int png_width) {
  return static_cast<std::size_t>(png_width * 5 / (plot_font_pt(png_width) * 4 * 4 / 3));
}
// Preamble of every report plot: outfile, terminal, title, grid, the key outside the plot area.
std::string plot_preamble(const std::string& png, const std::string& title, PlotSize size = PlotSize{});
// Panels for n lines of at most kMaxLines each (1 for n <= kMaxLines).
inline std::size_t plot_panels(std::size_t n) { return n <= kMaxLines ? 1 : (n + kMaxLines - 1) / kMaxLines; }
// A full-width plot of n lines: 1100 x 620, 400 px taller per extra panel (plot_panels).
inline PlotSize split_size(std::size_t n) { return {1100, int(620 + 400 * (plot_panels(n) - 1))}; }
// `plot` commands drawing `lines` (per line its parts: band, line; the first part may start `""`), at most
// kMaxLines lines per panel: one plot when they fit, else a multiplot of plot_panels panels stacked, each
// with the `shared` parts (reference lines) too. The first part of each plot names `dat_file`.
std::string split_plot(const std::string& dat_file, const std::vector<std::vector<std::string>>& lines,
                       const std::vector<std::string>& shared);
std::string task_text(const Sweep& s);  // "copy + reverse"
// The program's path (a name is looked up in PATH), or "" when not found.
std::string find_program(const std::string& name);
// Runs `gnuplot -e "outfile='NAME.png.tmp'" NAME.gp` in `dir` and renames the PNG into place (never a
// half-written PNG); "" on success, else what went wrong. Also used by `pelab probe`.
std::string render_gnuplot(const std::string& gnuplot, const std::string& dir, const std::string& name);
// Writes every script's .dat and .gp into SWEEP/plots and renders them; returns the PNG per script ("" when
// not rendered), in order.
std::vector<std::string> render_scripts(const Sweep& s, const std::vector<Script>& scripts, const ReportOptions& opt,
                                        ReportResult& out);

// report_plot.cpp / report_plot_curves.cpp
Script length_plot(const Sweep& s, const std::string& metric);
std::optional<Script> training_plot(const Sweep& s);
std::optional<Script> held_out_plot(const Sweep& s, const std::string& metric);
std::optional<Script> lm_position_plot(const Sweep& s);
// What curves span, for the y scale and the caption.
struct CurveRange {
  double lo_all = 0, hi_all = 0;  // of the means
  bool any = false, any_carried = false;
};
// Over runs' series (step -> value), one line "step mean std n n_carried band_lo band_hi" per step of
// `steps`: a run that has stopped counts at its last value (carried forward). Widens `range`.
std::string curve_block(const std::vector<std::map<long, double>>& series, const std::set<long>& steps,
                        bool percent, CurveRange& range);
// The axes of a held-out metric against the training step (gnuplot lines): step on x, the metric on y,
// 0..100 for a percentage, a log scale for a loss spanning more than 20x.
std::string step_axes(const MetricSpec& m, const CurveRange& range);

// report_plot_beyond.cpp: per group, the metric at each eval length above train_len against the step
// (HeldOut::beyond), mean ± std over seeds; none for a group where no length has two such steps (its
// label goes to `undrawn`).
std::vector<Script> beyond_plots(const Sweep& s, const std::string& metric, std::vector<std::string>* undrawn = nullptr);
// A group's plot file name: ("beyond_", 0, "rope") -> "beyond_1_rope", unique and readable.
std::string group_plot_name(const std::string& prefix, std::size_t gi, const std::string& label);
// report_plot_grid.cpp: per group with [eval] operand_grid results, a heatmap of exact match (mean over the
// group's runs with a grid) over (len_a, len_b), the training range outlined; none for a group without.
std::vector<Script> operand_grid_plots(const Sweep& s);
// The training budget of runs as a phrase: "first fit (a run stops at its first held-out evaluation
// with token_acc ≥ 99%; at most 4000 steps)", "fixed budget (2000 steps)", mixed or unknown.
std::string budget_policy_text(const std::vector<const Run*>& runs);

}  // namespace report_detail
}  // namespace pelab
