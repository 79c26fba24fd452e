// The length-generalization plot (metric vs eval length, with chance) and the training-loss curves.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

namespace {

using Blocks = std::vector<std::pair<std::size_t, std::size_t>>;  // (group, gnuplot index)

// One data block per group with a value at some length, appended to `dat`: length mean std n band_lo
// band_hi. Returns the blocks; `lo_mean`, `hi_mean` get the range of the means (any: there is one).
Blocks length_blocks(const Sweep& s, const std::string& metric, bool pct, std::ostringstream& dat,
                     double& lo_mean, double& hi_mean, bool& any) {
  Blocks blocks;
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::ostringstream block;
    int points = 0;
    for (std::size_t len : s.lengths) {
      const CellStats c = cell_stats(s.groups[i], len, metric);
      if (c.n == 0) continue;
      const double k = pct ? 100.0 : 1.0, mean = k * c.mean, sd = k * c.std;
      double lo = mean - sd, hi = mean + sd;
      if (pct) {
        lo = std::max(lo, 0.0);
        hi = std::min(hi, 100.0);
      } else if (lo <= 0) {
        lo = mean / 10;  // keeps the band drawable on a log axis
      }
      block << len << " " << gp_num(mean) << " " << gp_num(sd) << " " << c.n << " " << gp_num(lo) << " "
            << gp_num(hi) << "\n";
      lo_mean = any ? std::min(lo_mean, mean) : mean;
      hi_mean = any ? std::max(hi_mean, mean) : mean;
      any = true;
      ++points;
    }
    if (points == 0) continue;
    if (!blocks.empty()) dat << "\n\n";
    dat << "# " << s.groups[i].label << "\n" << block.str();
    blocks.emplace_back(i, blocks.size());
  }
  return blocks;
}

// Chance lines after the groups' `n_blocks` blocks, appended to `dat`: columns length chance.
// Returns (title, gnuplot index) of each.
std::vector<std::pair<std::string, std::size_t>> chance_blocks(const Sweep& s, const std::string& metric,
                                                               std::size_t n_blocks, std::ostringstream& dat) {
  std::vector<std::pair<std::string, std::size_t>> chances;
  for (const ChanceLine& cl : chance_lines(s, metric)) {
    std::ostringstream block;
    int points = 0;
    for (std::size_t j = 0; j < s.lengths.size(); ++j)
      if (cl.at[j]) {
        block << s.lengths[j] << " " << gp_num(100 * *cl.at[j]) << "\n";
        ++points;
      }
    if (points == 0) continue;
    const std::size_t idx = n_blocks + chances.size();
    if (idx > 0) dat << "\n\n";
    dat << "# " << cl.label << " (columns: length chance)\n" << block.str();
    chances.emplace_back(cl.label, idx);
  }
  return chances;
}

// More lengths than a table shows (a length_range): a linear axis with gnuplot's own tics, as
// Delétang et al. (2023) plot 1..500, and a point every few lengths.
bool many_lengths(const Sweep& s) { return s.lengths.size() > kTableLengths; }

// The x axis: every eval length and training length as a tic on a log2 axis; with many lengths linear.
std::string length_x_axis(const Sweep& s, const std::set<std::size_t>& train_lens) {
  std::ostringstream gp;
  std::size_t xmin = s.lengths.front(), xmax = s.lengths.back();
  for (std::size_t t : train_lens) {
    xmin = std::min(xmin, t);
    xmax = std::max(xmax, t);
  }
  if (many_lengths(s)) {
    gp << "set xlabel \"eval length\"\nset xrange [0:" << xmax + (xmax + 49) / 50 << "]\n";
    return gp.str();
  }
  gp << "set xlabel \"eval length (log2 scale)\"\nset logscale x 2\n";
  gp << "set xrange [" << gp_num(xmin / 1.25) << ":" << gp_num(xmax * 1.25) << "]\n";
  gp << "set xtics (";
  for (std::size_t j = 0; j < s.lengths.size(); ++j) gp << (j ? ", " : "") << s.lengths[j];
  gp << ")\n";
  return gp.str();
}

// A grey dashed vertical line, labelled, at each training length.
std::string train_length_markers(const std::set<std::size_t>& train_lens) {
  std::ostringstream gp;
  for (std::size_t t : train_lens) {
    gp << "set arrow from " << t << ", graph 0 to " << t << ", graph 1 nohead dt 2 lw 1.5 lc rgb \"#555555\"\n";
    gp << "set label " << gp_string(train_lens.size() == 1 ? "train length" : "train length " + std::to_string(t))
       << " at " << t << ", graph 0.5 center rotate by 90 offset -1,0 textcolor rgb \"#555555\"\n";
  }
  return gp.str();
}

// The plot command: a band and a line per group, then the chance lines.
std::string length_plot_command(const Sweep& s, const Blocks& blocks,
                                const std::vector<std::pair<std::string, std::size_t>>& chances) {
  if (blocks.empty())
    return "set label \"no data: every length is n/a\" at graph 0.5, graph 0.5 center\n"
           "plot NaN notitle\n";
  std::vector<std::vector<std::string>> lines;
  for (const auto& [g, idx] : blocks) {
    const std::string every = many_lengths(s) ? " pi " + std::to_string(s.lengths.size() / 10) : "";
    lines.push_back({"\"\" index " + std::to_string(idx) + " using 1:5:6 with filledcurves lc rgb \"" + plot_color(g) +
                         "\" notitle",
                     "\"\" index " + std::to_string(idx) + " using 1:2 with linespoints lw 2 dt " +
                         std::to_string(plot_dash_type(s, g)) + " pt " + std::to_string(plot_point_type(g)) + every +
                         " ps 1.2 lc rgb \"" + plot_color(g) + "\" title " + gp_string(s.groups[g].label)});
  }
  std::vector<std::string> shared;
  for (std::size_t k = 0; k < chances.size(); ++k)
    shared.push_back("\"\" index " + std::to_string(chances[k].second) + " using 1:2 with lines dt " +
                     std::to_string(3 + k) + " lw 1.5 lc rgb \"#000000\" title " + gp_string(chances[k].first));
  return split_plot("length_generalization.dat", lines, shared);
}

}  // namespace

Script length_plot(const Sweep& s, const std::string& metric) {
  const MetricSpec& m = find_metric(metric);
  const bool pct = m.percent;
  std::ostringstream dat;
  dat << "# " << m.title << " vs eval length, mean and sample std over seeds; n/a lengths omitted\n"
      << "# one block per group (gnuplot index); columns: length mean std n band_lo band_hi\n";
  double lo_mean = 0, hi_mean = 0;
  bool any = false;
  const Blocks blocks = length_blocks(s, metric, pct, dat, lo_mean, hi_mean, any);
  const auto chances = chance_blocks(s, metric, blocks.size(), dat);

  std::set<std::size_t> train_lens;
  for (const Run& r : s.runs) train_lens.insert(r.train_len);
  std::ostringstream gp;
  gp << "# Length generalization: " << m.title << " vs eval length.\n"
     << "# Re-render: cd to this directory and run `gnuplot length_generalization.gp`.\n"
     << plot_preamble("length_generalization.png",
                      task_text(s) + ": " + m.title + " vs eval length (mean ± std over seeds)",
                      split_size(blocks.size()))
     << "set ylabel " << gp_string(m.title) << "\n"
     << length_x_axis(s, train_lens);
  if (pct) {
    gp << "set yrange [-2:102]\n";
  } else if (any && lo_mean > 0 && hi_mean / lo_mean > 20) {
    gp << "set logscale y\n";
  }
  gp << train_length_markers(train_lens) << "set style fill transparent solid 0.18 noborder\n"
     << length_plot_command(s, blocks, chances);
  Script sc{"length_generalization", dat.str(), gp.str(), ""};
  sc.caption = m.title + " against eval length: mean over seeds, band ± one sample std; the grey dashed vertical "
               "line is the training length" +
               std::string(chances.empty() ? "" : ", the black dotted line the chance level") +
               "; n/a lengths are left out.";
  return sc;
}

// Mean training loss over a group's seeds at each logged step. Where some seeds have stopped, the mean is
// over those still training and the line is drawn thin and dashed (not silently a different average).
std::optional<Script> training_plot(const Sweep& s) {
  std::ostringstream dat;
  dat << "# training loss (split train) vs step, mean over the group's runs that logged the step\n"
      << "# two blocks per group (gnuplot index 2g: every step, 2g+1: steps every run of the group logged);\n"
      << "# columns: step mean_loss runs\n";
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (group, index of its first block)
  bool any_partial = false;
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::map<long, std::pair<double, int>> at;
    for (const Run* r : s.groups[i].runs)
      for (const auto& [step, loss] : r->train_loss) {
        at[step].first += loss;
        at[step].second += 1;
      }
    if (at.empty()) continue;
    const int size = static_cast<int>(s.groups[i].runs.size());
    std::ostringstream all, full;
    for (const auto& [step, sc] : at) {
      const std::string line = std::to_string(step) + " " + gp_num(sc.first / sc.second) + " " +
                               std::to_string(sc.second) + "\n";
      all << line;
      if (sc.second == size) full << line;
      else any_partial = true;
    }
    if (!blocks.empty()) dat << "\n\n";
    dat << "# " << s.groups[i].label << "\n" << all.str() << "\n\n# " << s.groups[i].label << ", all "
        << size << " runs\n" << (full.str().empty() ? all.str().substr(0, all.str().find('\n') + 1) : full.str());
    blocks.emplace_back(i, 2 * blocks.size());
  }
  if (blocks.empty()) return std::nullopt;
  std::ostringstream gp;
  gp << "# Training curves: training loss vs step, mean over seeds.\n"
     << "# Re-render: cd to this directory and run `gnuplot training_curves.gp`.\n"
     << plot_preamble("training_curves.png", task_text(s) + ": training loss (mean over seeds)",
                      split_size(blocks.size()))
     << "set xlabel \"step\"\n"
     << "set ylabel \"training loss (log scale)\"\n"
     << "set logscale y\n"
     << "set autoscale xfix\n";
  std::vector<std::vector<std::string>> lines;
  for (const auto& [g, idx] : blocks)
    lines.push_back({"\"\" index " + std::to_string(idx) + " using 1:2 with lines lw 1 dt 2 lc rgb \"" + plot_color(g) +
                         "\" notitle",
                     "\"\" index " + std::to_string(idx + 1) + " using 1:2 with lines lw 2 lc rgb \"" + plot_color(g) +
                         "\" title " + gp_string(s.groups[g].label)});
  std::vector<std::string> shared;
  if (any_partial) shared.push_back("NaN with lines lw 1 dt 2 lc rgb \"#555555\" title \"fewer seeds (others stopped)\"");
  gp << split_plot("training_curves.dat", lines, shared);
  Script sc{"training_curves", dat.str(), gp.str(), ""};
  sc.caption = "Training loss (mean over the log interval) against step, mean over seeds" +
               std::string(any_partial ? "; thin dashed where some seeds had already stopped (the mean is then over "
                                         "the seeds still training)"
                                       : "") +
               ".";
  return sc;
}

}  // namespace report_detail
}  // namespace pelab
