// Extrapolation over training: per group, the held-out metric at the training length and at each eval
// length above it against the step (metrics.jsonl "beyond"), so the effect of stopping early is visible.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

namespace {

using Series = std::vector<std::map<long, double>>;  // per run with values: step -> value

// One curve of a group's plot: the training length's held-out values, or one length beyond it.
struct Curve {
  std::size_t length = 0;
  bool train = false;
  Series series;
};

// The group's curves: its training length first, then every length above it some run tracked.
std::vector<Curve> group_curves(const Group& g, const std::string& metric, double k) {
  std::map<std::size_t, Series> beyond;  // length -> per run of the group, in its order (empty: none)
  Curve train;
  train.train = true;
  for (std::size_t i = 0; i < g.runs.size(); ++i) {
    const Run* r = g.runs[i];
    train.length = r->train_len;
    std::map<long, double> at_train;
    for (const HeldOut& h : r->held_out) {
      if (auto it = h.metrics.find(metric); it != h.metrics.end()) at_train[h.step] = k * it->second;
      for (const auto& [len, mv] : h.beyond) {
        Series& per_run = beyond[len];
        per_run.resize(g.runs.size());
        if (auto it = mv.find(metric); it != mv.end()) per_run[i][h.step] = k * it->second;
      }
    }
    if (!at_train.empty()) train.series.push_back(at_train);
  }
  std::vector<Curve> out;
  if (!train.series.empty()) out.push_back(train);
  for (auto& [len, per_run] : beyond) {
    Curve c;
    c.length = len;
    for (auto& x : per_run)
      if (!x.empty()) c.series.push_back(x);
    if (!c.series.empty()) out.push_back(c);
  }
  return out;
}

std::set<long> steps_of(const Series& series) {
  std::set<long> steps;
  for (const auto& x : series)
    for (const auto& [st, v] : x) steps.insert(st);
  return steps;
}

// The curve's colour: by the length's place among the sweep's eval lengths, the same in every group's
// plot; the training length black.
std::string curve_color(const Sweep& s, const Curve& c) {
  if (c.train) return "#000000";
  return plot_color(static_cast<std::size_t>(std::lower_bound(s.lengths.begin(), s.lengths.end(), c.length) -
                                             s.lengths.begin()));
}

std::string group_script_gp(const Sweep& s, const Group& g, const std::vector<Curve>& curves, const MetricSpec& m,
                            const std::string& name, const CurveRange& range, long xmax) {
  std::ostringstream gp;
  const std::string title = task_text(s) + ": " + g.label + ": held-out " + m.title +
                            " during training, per eval length (mean ± std over " + std::to_string(g.runs.size()) +
                            " run(s)); budget: " + budget_policy_text(g.runs);
  const PlotSize size{kPanelPlot.width, int(kPanelPlot.height * plot_panels(curves.size()))};
  gp << "# Held-out " << m.name << " at the training length and beyond it vs step, mean over seeds.\n"
     << "# Re-render: cd to this directory and run `gnuplot " << name << ".gp`.\n"
     << plot_preamble(name + ".png", title, size);
  // Every group's panel spans the same steps (the sweep's last held-out evaluation), so panels compare.
  gp << "set title " << gp_wrapped(title, 64) << "\n" << step_axes(m, range) << "set xrange [0:" << xmax << "]\n"
     << "set key outside below\n";
  std::set<long> stops;  // each run's last held-out evaluation
  for (const Run* r : g.runs)
    if (!r->held_out.empty()) stops.insert(r->held_out.back().step);
  for (long st : stops)
    gp << "set arrow from " << st << ", graph 0 to " << st << ", graph 1 nohead dt 3 lw 1 lc rgb \"#888888\"\n";
  gp << "set style fill transparent solid 0.12 noborder\n";
  std::vector<std::vector<std::string>> lines;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const std::string c = curve_color(s, curves[i]), idx = std::to_string(i);
    const std::string label = "length " + std::to_string(curves[i].length) + (curves[i].train ? " (training)" : "");
    lines.push_back({"\"\" index " + idx + " using 1:6:7 with filledcurves lc rgb \"" + c + "\" notitle",
                     "\"\" index " + idx + " using 1:2 with linespoints lw " + (curves[i].train ? "2.5" : "2") +
                         " pt 7 ps 0.6 lc rgb \"" + c + "\" title " + gp_string(label)});
  }
  gp << split_plot(name + ".dat", lines, {"NaN with lines dt 3 lw 1 lc rgb \"#888888\" title \"a run stopped\""});
  return gp.str();
}

std::string beyond_caption(const Group& g, const MetricSpec& m, const CurveRange& range) {
  std::set<std::size_t> samples;
  for (const Run* r : g.runs)
    if (r->beyond_samples) samples.insert(r->beyond_samples);
  std::string n;
  for (std::size_t x : samples) n += (n.empty() ? "" : " / ") + std::to_string(x);
  return g.label + ": held-out " + m.title + " during training at the training length (black) and at each eval "
         "length above it (" + n + " held-out examples per length, [eval] beyond_samples), mean over seeds, band ± "
         "one sample std. Dotted vertical lines: where a run stopped" +
         (range.any_carried ? "; after it the run counts at its last value (carried forward)" : "") +
         ". A run's last point, when it ran to its step limit, is its final evaluation (all of [eval] samples). "
         "Budget: " + budget_policy_text(g.runs) + ".";
}

}  // namespace

std::string group_plot_name(const std::string& prefix, std::size_t gi, const std::string& label) {
  std::string slug;
  for (char c : label) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
    if (keep) slug += c;
    else if (!slug.empty() && slug.back() != '_') slug += '_';
    if (slug.size() >= 40) break;
  }
  while (!slug.empty() && slug.back() == '_') slug.pop_back();
  return prefix + std::to_string(gi + 1) + (slug.empty() ? "" : "_" + slug);
}

std::string budget_policy_text(const std::vector<const Run*>& runs) {
  std::set<std::string> fits, fixed;
  std::size_t unknown = 0;
  for (const Run* r : runs) {
    const RunSettings& st = r->settings;
    if (!st.known) ++unknown;
    else if (!st.early_stop_metric.empty() && st.eval_every > 0)
      fits.insert(target_text(st.early_stop_metric, st.early_stop_target) + "; at most " + std::to_string(st.steps) +
                  " steps");
    else fixed.insert(std::to_string(st.steps) + " steps");
  }
  auto join_set = [](const std::set<std::string>& xs) {
    std::string out;
    for (const std::string& x : xs) out += (out.empty() ? "" : " / ") + x;
    return out;
  };
  const std::string fit = "first fit (a run stops at its first held-out evaluation with " + join_set(fits) + ")";
  const std::string fix = "fixed budget (" + join_set(fixed) + ")";
  if (unknown == runs.size()) return "unknown (no config.toml)";
  std::string out = fits.empty() ? fix : fixed.empty() ? fit : "mixed: " + fit + ", " + fix;
  if (unknown) out += "; " + std::to_string(unknown) + " run(s) without config.toml";
  return out;
}

// Definition in report_detail.hpp; curves as held_out_plot draws them (a stopped run carried forward).
std::vector<Script> beyond_plots(const Sweep& s, const std::string& metric, std::vector<std::string>* undrawn) {
  const MetricSpec& m = find_metric(metric);
  const double k = m.percent ? 100.0 : 1.0;
  std::vector<Script> out;
  long xmax = 1;  // the sweep's last held-out evaluation: one x-range for every group's panel
  for (const Run& r : s.runs)
    if (!r.held_out.empty()) xmax = std::max(xmax, r.held_out.back().step);
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const Group& g = s.groups[gi];
    const std::vector<Curve> curves = group_curves(g, metric, k);
    const bool drawn = std::any_of(curves.begin(), curves.end(),
                                   [](const Curve& c) { return !c.train && steps_of(c.series).size() >= 2; });
    if (!drawn) {
      if (undrawn) undrawn->push_back(g.label);
      continue;
    }
    const std::string name = group_plot_name("beyond_", gi, g.label);
    std::ostringstream dat;
    dat << "# " << g.label << ": held-out " << m.name << " vs step at the training length (block 0) and each eval\n"
        << "# length above it (metrics.jsonl \"beyond\"), over the group's runs; a run that has stopped counts at\n"
        << "# its last value. One block per length: step mean std n n_carried band_lo band_hi\n";
    CurveRange range;
    for (std::size_t i = 0; i < curves.size(); ++i) {
      if (i) dat << "\n\n";
      dat << "# length " << curves[i].length << (curves[i].train ? " (training)" : "") << "\n"
          << curve_block(curves[i].series, steps_of(curves[i].series), m.percent, range);
    }
    Script sc{name, dat.str(), group_script_gp(s, g, curves, m, name, range, xmax), ""};
    sc.caption = beyond_caption(g, m, range);
    out.push_back(sc);
  }
  return out;
}

}  // namespace report_detail
}  // namespace pelab
