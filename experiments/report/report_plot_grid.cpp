// Operand-length heatmaps of two-operand tasks ([eval] operand_grid): per group, exact match over
// (len_a, len_b), mean over the group's runs that have a grid, the training range outlined; and the same
// heatmap of named evaluations at one task parameter each over the eval lengths (the passkey depth grid).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <map>
#include <set>
#include <sstream>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

namespace {

constexpr const char* kGridMetric = "exact_match";  // whole answers: what carries across operand lengths
constexpr std::size_t kMaxLabelledCells = 256;       // beyond it the printed values overlap

struct GridCell {
  std::vector<double> values;  // per run with a value, percent
  std::size_t n_na = 0;
  bool in_distribution = false;
};
using Grid = std::map<std::pair<std::size_t, std::size_t>, GridCell>;  // (len_a, len_b) -> cell

// The group's cells over its runs with an operand grid; `runs` counts those runs.
Grid group_grid(const Group& g, std::size_t& runs) {
  Grid grid;
  runs = 0;
  for (const Run* r : g.runs) {
    if (r->operand_grid.empty()) continue;
    ++runs;
    for (const LengthResult& lr : r->operand_grid) {
      GridCell& c = grid[{lr.len_a.value_or(lr.length), lr.len_b.value_or(lr.length)}];
      c.in_distribution = c.in_distribution || lr.in_distribution;
      if (auto v = lr.metric(kGridMetric)) c.values.push_back(100 * *v);
      else if (!lr.ok) ++c.n_na;
    }
  }
  return grid;
}

// The spacing of the evaluated lengths (the range's step): their smallest gap, 1 for a single length.
double grid_step(const std::set<std::size_t>& ls) {
  std::size_t step = 0;
  for (auto a = ls.begin(), b = std::next(a); a != ls.end() && b != ls.end(); ++a, ++b)
    if (step == 0 || *b - *a < step) step = *b - *a;
  return step ? double(step) : 1.0;
}

// Axis texts of a heatmap: the operand grid's, or a task parameter's over the eval lengths (param_grids).
struct GridAxes {
  std::string what = "operand lengths (len_a, len_b), mean over seeds ([eval] operand_grid)";
  std::string x = "len_a (digits of the first operand)", y = "len_b (digits of the second operand)";
  bool square = true;  // one unit on both axes alike (digits and digits)
};

std::string grid_dat(const Group& g, const Grid& grid, const GridAxes& axes = {}) {
  std::ostringstream dat;
  if (axes.square)
    dat << "# " << g.label << ": exact match (%) per (len_a, len_b), over the group's runs with an operand grid.\n"
        << "# len_a len_b mean std n n_na in_distribution (mean NaN: no run has a value)\n";
  else
    dat << "# " << g.label << ": exact match (%) per " << axes.what << ".\n"
        << "# x y mean std n n_na in_distribution (mean NaN: no run has a value)\n";
  std::size_t last_a = grid.empty() ? 0 : grid.begin()->first.first;
  for (const auto& [ab, c] : grid) {
    if (ab.first != last_a) dat << "\n";  // one block per len_a
    last_a = ab.first;
    const MeanStd ms = c.values.empty() ? MeanStd{} : mean_std(c.values);
    const std::string mean = c.values.empty() ? "NaN" : gp_num(ms.mean), sd = c.values.empty() ? "NaN" : gp_num(ms.std);
    dat << ab.first << " " << ab.second << " " << mean << " " << sd << " " << c.values.size()
        << " " << c.n_na << " " << (c.in_distribution ? 1 : 0) << "\n";
  }
  return dat.str();
}


std::string grid_gp(const Sweep& s, const Group& g, const Grid& grid, std::size_t runs, const std::string& name,
                    const GridAxes& axes = {}) {
  std::set<std::size_t> as, bs, in_a, in_b;
  for (const auto& [ab, c] : grid) {
    as.insert(ab.first), bs.insert(ab.second);
    if (c.in_distribution) in_a.insert(ab.first), in_b.insert(ab.second);
  }
  const double ha = grid_step(as) / 2, hb = grid_step(bs) / 2;
  std::ostringstream gp;
  const std::string title = task_text(s) + ": " + g.label + ": exact match, mean over " + std::to_string(runs) +
                            " seed" + (runs == 1 ? "" : "s");
  gp << "# Exact match per " << axes.what << ".\n"
     << "# Re-render: cd to this directory and run `gnuplot " << name << ".gp`.\n"
     << plot_preamble(name + ".png", title)
     << "unset grid\nunset key\n" << (axes.square ? "set size ratio -1\n" : "")
     << "set xlabel " << gp_string(axes.x) << "\nset ylabel " << gp_string(axes.y) << "\n"
     << "set xrange [" << gp_num(*as.begin() - ha) << ":" << gp_num(*as.rbegin() + ha) << "]\n"
     << "set yrange [" << gp_num(*bs.begin() - hb) << ":" << gp_num(*bs.rbegin() + hb) << "]\n"
     << "set xtics " << *as.begin() << ", " << gp_num(2 * ha) << " out nomirror\n"
     << "set ytics " << *bs.begin() << ", " << gp_num(2 * hb) << " out nomirror\n"
     << "set cbrange [0:100]\nset cblabel \"exact match (%)\"\n"
     << "set palette defined (0 \"#440154\", 0.25 \"#3b528b\", 0.5 \"#21918c\", 0.75 \"#5ec962\", 1 \"#fde725\")\n";
  if (!in_a.empty())  // the training range: cells with both operands within it
    gp << "set object 1 rect from " << gp_num(*in_a.begin() - ha) << ", " << gp_num(*in_b.begin() - hb) << " to "
       << gp_num(*in_a.rbegin() + ha) << ", " << gp_num(*in_b.rbegin() + hb)
       << " front fillstyle empty border lc rgb \"#ff2020\" lw 3 dt 2\n";
  gp << "plot " << gp_string(name + ".dat") << " using 1:2:3 with image";
  if (grid.size() <= kMaxLabelledCells)  // dark text on the light end of the palette, white on the dark
    gp << ", \\\n  \"\" using 1:2:($5 > 0 && $3 >= 60 ? sprintf(\"%.0f\", $3) : \"\") with labels tc rgb \"#000000\""
       << ", \\\n  \"\" using 1:2:($5 > 0 && $3 < 60 ? sprintf(\"%.0f\", $3) : \"\") with labels tc rgb \"#ffffff\""
       << ", \\\n  \"\" using 1:2:($5 == 0 ? \"n/a\" : \"\") with labels tc rgb \"#888888\"";
  gp << "\n";
  return gp.str();
}

// A run's one evaluation-time task setting ("task.passkey.depth=0.25" of `pelab eval --set`) and its value,
// or nothing when it has none, several, or a value that is not a number.
std::optional<std::pair<std::string, double>> task_setting(const Run& r) {
  if (r.eval_settings.size() != 1 || r.eval_settings[0].compare(0, 5, "task.") != 0) return std::nullopt;
  const std::string& kv = r.eval_settings[0];
  const auto eq = kv.find('=');
  char* end = nullptr;
  const double v = eq == std::string::npos ? 0 : std::strtod(kv.c_str() + eq + 1, &end);
  if (eq == std::string::npos || end == kv.c_str() + eq + 1 || *end) return std::nullopt;
  return std::make_pair(kv.substr(0, eq), v);
}

// The passkey depth x length grid: named evaluations each at one value of a task parameter, merged over
// the groups that differ only in the evaluation's name: (value in %, eval length) -> exact match.
struct ParamGrid {
  Group group;  // label without the evaluation's name; runs: those with such an evaluation
  std::string param;
  Grid grid;
  std::set<std::string> run_dirs;
};

std::vector<ParamGrid> param_grids(const Sweep& s) {
  const auto eval_key = std::find(s.group_keys.begin(), s.group_keys.end(), "eval");
  if (eval_key == s.group_keys.end()) return {};
  const std::size_t ek = std::size_t(eval_key - s.group_keys.begin());
  std::vector<ParamGrid> out;
  for (const Group& g : s.groups)
    for (const Run* r : g.runs) {
      const auto setting = task_setting(*r);
      if (!setting) continue;
      std::string label;
      for (std::size_t i = 0; i < g.values.size(); ++i)
        if (i != ek) label += (label.empty() ? "" : ", ") + g.values[i];
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const ParamGrid& p) { return p.group.label == label && p.param == setting->first; });
      if (it == out.end()) it = out.insert(out.end(), ParamGrid{Group{{}, label, {}}, setting->first, {}, {}});
      it->run_dirs.insert(r->rel_dir);
      for (const LengthResult& lr : r->results) {
        GridCell& c = it->grid[{std::size_t(std::lround(100 * setting->second)), lr.length}];
        c.in_distribution = c.in_distribution || lr.in_distribution;
        if (auto v = lr.metric(kGridMetric)) c.values.push_back(100 * *v);
        else if (!lr.ok) ++c.n_na;
      }
    }
  return out;
}

}  // namespace

std::vector<Script> operand_grid_plots(const Sweep& s) {
  std::vector<Script> out;
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const Group& g = s.groups[gi];
    std::size_t runs = 0;
    const Grid grid = group_grid(g, runs);
    if (grid.empty()) continue;
    const std::string name = group_plot_name("operand_grid_", gi, g.label);
    Script sc{name, grid_dat(g, grid), grid_gp(s, g, grid, runs, name), ""};
    sc.caption = g.label + ": exact match (%) per operand lengths ([eval] operand_grid: the first operand len_a "
                 "digits, the second len_b), mean over the group's " + std::to_string(runs) +
                 " run(s) with a grid. Dashed box: the training range (both operands within it); n/a: no run "
                 "could be evaluated there. The numbers: results.csv, the rows with len_a and len_b.";
    out.push_back(sc);
  }
  std::size_t pi = 0;
  for (const ParamGrid& p : param_grids(s)) {  // named in the operand grid's family: the page shows them alike
    const std::string name = group_plot_name("operand_grid_eval_", pi++, p.group.label);
    GridAxes axes;
    axes.what = p.param + " (in %, named evaluations) and eval length, mean over seeds";
    axes.x = p.param + " (%)", axes.y = "eval length", axes.square = false;
    Script sc{name, grid_dat(p.group, p.grid, axes), grid_gp(s, p.group, p.grid, p.run_dirs.size(), name, axes), ""};
    sc.caption = p.group.label + ": exact match (%) per " + p.param + " (x, in %, one named evaluation each: `pelab "
                 "eval --set " + p.param + "=...`) and eval length (y), mean over " +
                 std::to_string(p.run_dirs.size()) + " run(s). Dashed box: the training lengths.";
    out.push_back(sc);
  }
  return out;
}

}  // namespace report_detail
}  // namespace pelab
