// Held-out curves over training steps, and a language model's loss per position.
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

// Per run of the group with held-out values of `metric`: step -> value (times k); also collects the
// runs' eval_every into `every`.
std::vector<std::map<long, double>> held_out_series(const Group& g, const std::string& metric, double k,
                                                    std::set<std::size_t>& every) {
  std::vector<std::map<long, double>> series;
  for (const Run* r : g.runs) {
    std::map<long, double> x;
    for (const HeldOut& h : r->held_out)
      if (auto it = h.metrics.find(metric); it != h.metrics.end()) x[h.step] = k * it->second;
    if (!x.empty()) series.push_back(x);
    if (r->settings.known && r->settings.eval_every) every.insert(r->settings.eval_every);
  }
  return series;
}

}  // namespace

std::string curve_block(const std::vector<std::map<long, double>>& series, const std::set<long>& steps,
                        bool percent, CurveRange& range) {
  std::ostringstream curve;
  for (long st : steps) {
    std::vector<double> vs;
    int carried = 0;
    for (const auto& x : series) {
      if (auto it = x.find(st); it != x.end()) {
        vs.push_back(it->second);
      } else if (st > x.rbegin()->first) {
        vs.push_back(x.rbegin()->second);
        ++carried;
      }
    }
    if (vs.empty()) continue;
    double mean = 0;
    for (double v : vs) mean += v;
    mean /= static_cast<double>(vs.size());
    double ss = 0;
    for (double v : vs) ss += (v - mean) * (v - mean);
    const double sd = vs.size() > 1 ? std::sqrt(ss / static_cast<double>(vs.size() - 1)) : 0.0;
    double lo = mean - sd, hi = mean + sd;
    if (percent) {
      lo = std::max(lo, 0.0);
      hi = std::min(hi, 100.0);
    } else if (lo <= 0) {
      lo = mean / 10;
    }
    curve << st << " " << gp_num(mean) << " " << gp_num(sd) << " " << vs.size() << " " << carried << " "
          << gp_num(lo) << " " << gp_num(hi) << "\n";
    range.any_carried = range.any_carried || carried > 0;
    range.lo_all = range.any ? std::min(range.lo_all, mean) : mean;
    range.hi_all = range.any ? std::max(range.hi_all, mean) : mean;
    range.any = true;
  }
  return curve.str();
}

std::string step_axes(const MetricSpec& m, const CurveRange& range) {
  std::string out = "set xlabel \"step\"\nset ylabel " + gp_string("held-out " + m.title) +
                    "\nset autoscale xfix\nset offsets 0, graph 0.03, 0, 0\n";
  if (m.percent) out += "set yrange [-2:102]\n";
  else if (range.any && range.lo_all > 0 && range.hi_all / range.lo_all > 20) out += "set logscale y\n";
  return out;
}

namespace {

// Reference lines shared by every run: the early-stop target (when it is this metric) and chance.
struct ReferenceLines {
  std::set<double> targets, chances;
  bool all_target = true;  // every run stops early on this metric
};

ReferenceLines reference_lines(const Sweep& s, const std::string& metric) {
  ReferenceLines ref;
  for (const Run& r : s.runs) {
    if (r.settings.early_stop_metric == metric) ref.targets.insert(r.settings.early_stop_target);
    else ref.all_target = false;
    for (const LengthResult& lr : r.results)
      if (lr.length == r.train_len)
        if (auto it = lr.chance.find(metric); it != lr.chance.end()) ref.chances.insert(it->second);
  }
  return ref;
}

// "length 16" when every run trained at one length, else "train_len".
std::string at_train_len_text(const Sweep& s) {
  std::set<std::size_t> train_lens;
  for (const Run& r : s.runs) train_lens.insert(r.train_len);
  if (train_lens.size() == 1) return "length " + std::to_string(*train_lens.begin());
  return "train_len";
}

// The plot command: per group (group, index of its first block) a band, a mean line and its runs' last
// evaluations; then the legend entry for those, the target and chance.
std::string held_out_plot_command(const Sweep& s, const std::vector<std::pair<std::size_t, std::size_t>>& blocks,
                                  const std::string& metric, double k, const ReferenceLines& ref) {
  std::vector<std::vector<std::string>> lines;
  for (const auto& [g, idx] : blocks) {
    const std::string c = plot_color(g);
    lines.push_back(
        {"\"\" index " + std::to_string(idx) + " using 1:6:7 with filledcurves lc rgb \"" + c + "\" notitle",
         "\"\" index " + std::to_string(idx) + " using 1:2 with lines lw 2 lc rgb \"" + c + "\" title " +
             gp_string(s.groups[g].label),
         "\"\" index " + std::to_string(idx + 1) + " using 1:2 with points pt 6 ps 1.6 lw 1.5 lc rgb \"" + c +
             "\" notitle"});
  }
  std::vector<std::string> shared = {
      "NaN with points pt 6 ps 1.6 lw 1.5 lc rgb \"#000000\" title \"a run's last evaluation\""};
  if (ref.all_target && ref.targets.size() == 1)
    shared.push_back(gp_num(k * *ref.targets.begin()) + " with lines dt 3 lw 1.5 lc rgb \"#555555\" title " +
                     gp_string("target " + target_text(metric, *ref.targets.begin())));
  if (ref.chances.size() == 1)
    shared.push_back(gp_num(k * *ref.chances.begin()) + " with lines dt 4 lw 1.5 lc rgb \"#000000\" title \"chance\"");
  return split_plot("held_out_curves.dat", lines, shared);
}

std::string held_out_caption(const MetricSpec& m, const std::string& at_len, const std::set<std::size_t>& every,
                             bool any_carried) {
  std::string every_text;
  for (std::size_t e : every) every_text += (every_text.empty() ? "" : " / ") + std::to_string(e);
  return "Held-out " + m.title + " at " + at_len + " during training" +
         (every_text.empty() ? "" : " (evaluated every " + every_text + " steps and at the end)") +
         ": mean over seeds, band ± one sample std. Circles mark each run's last evaluation" +
         (any_carried ? "; after it the run counts at that value (carried forward), so the mean stays over all "
                        "seeds"
                      : "") +
         ".";
}

}  // namespace

// Definition in report_detail.hpp: every run counts at every step, a stopped run at its last value.
std::optional<Script> held_out_plot(const Sweep& s, const std::string& metric) {
  const MetricSpec& m = find_metric(metric);
  const double k = m.percent ? 100.0 : 1.0;
  std::ostringstream dat;
  dat << "# held-out " << m.name << " at train_len vs step (metrics.jsonl eval records), over the group's runs;\n"
      << "# a run that has stopped counts at its last value (carried forward).\n"
      << "# two blocks per group (gnuplot index 2g: step mean std n n_carried band_lo band_hi;\n"
      << "# 2g+1: each run's last evaluation: step value)\n";
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (group, index of its first block)
  std::set<std::size_t> every;
  std::size_t most_steps = 0;  // a curve needs two evaluations (runs without eval_every have only the final one)
  CurveRange range;
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const auto series = held_out_series(s.groups[gi], metric, k, every);
    if (series.empty()) continue;
    std::set<long> steps;
    for (const auto& x : series)
      for (const auto& [st, v] : x) steps.insert(st);
    most_steps = std::max(most_steps, steps.size());
    const std::string curve = curve_block(series, steps, m.percent, range);
    std::ostringstream stops;
    for (const auto& x : series) stops << x.rbegin()->first << " " << gp_num(x.rbegin()->second) << "\n";
    if (!blocks.empty()) dat << "\n\n";
    dat << "# " << s.groups[gi].label << "\n" << curve << "\n\n# " << s.groups[gi].label
        << ": last evaluation of each run\n" << stops.str();
    blocks.emplace_back(gi, 2 * blocks.size());
  }
  if (blocks.empty() || most_steps < 2) return std::nullopt;

  const ReferenceLines ref = reference_lines(s, metric);
  const std::string at_len = at_train_len_text(s);
  std::ostringstream gp;
  gp << "# Held-out " << m.name << " at the training length vs step, mean over seeds.\n"
     << "# Re-render: cd to this directory and run `gnuplot held_out_curves.gp`.\n"
     << plot_preamble("held_out_curves.png",
                      task_text(s) + ": held-out " + m.title + " at " + at_len + " during training (mean ± std over seeds)",
                      split_size(blocks.size()))
     << step_axes(m, range);
  gp << "set style fill transparent solid 0.18 noborder\n";
  gp << held_out_plot_command(s, blocks, metric, k, ref);

  Script sc{"held_out_curves", dat.str(), gp.str(), ""};
  sc.caption = held_out_caption(m, at_len, every, range.any_carried);
  return sc;
}

// Loss per position bucket (eval.json buckets) at the longest eval length each group has, mean over seeds.
std::optional<Script> lm_position_plot(const Sweep& s) {
  if (!s.any_lm) return std::nullopt;
  std::ostringstream dat;
  dat << "# language-model loss per position bucket (eval.json buckets), mean over seeds, at the longest\n"
      << "# eval length each group was evaluated at; one block per group; columns: from to middle loss runs\n";
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (group, index)
  std::vector<std::string> titles;
  std::set<std::size_t> train_lens;
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const Group& g = s.groups[gi];
    if (!g.runs.front()->is_lm) continue;
    std::optional<std::size_t> len;
    for (std::size_t l : s.lengths)
      if (cell_stats(g, l, "loss").n > 0) len = l;
    if (!len) continue;
    std::vector<Bucket> sum;
    std::vector<int> n;
    for (const Run* r : g.runs) {
      train_lens.insert(r->train_len);
      for (const LengthResult& lr : r->results) {
        if (lr.length != *len || !lr.ok || lr.buckets.empty()) continue;
        if (sum.empty()) {
          sum = lr.buckets;
          for (Bucket& b : sum) b.loss = 0;
          n.assign(sum.size(), 0);
        }
        for (std::size_t b = 0; b < lr.buckets.size() && b < sum.size(); ++b)
          if (lr.buckets[b].from == sum[b].from && lr.buckets[b].to == sum[b].to && std::isfinite(lr.buckets[b].loss)) {
            sum[b].loss += lr.buckets[b].loss;
            ++n[b];
          }
      }
    }
    std::ostringstream block;
    int points = 0;
    for (std::size_t b = 0; b < sum.size(); ++b) {
      if (!n[b]) continue;
      block << sum[b].from << " " << sum[b].to << " " << gp_num(0.5 * double(sum[b].from + sum[b].to)) << " "
            << gp_num(sum[b].loss / n[b]) << " " << n[b] << "\n";
      ++points;
    }
    if (!points) continue;
    if (!blocks.empty()) dat << "\n\n";
    const std::string title = g.label + " (length " + std::to_string(*len) + ")";
    dat << "# " << title << "\n" << block.str();
    blocks.emplace_back(gi, blocks.size());
    titles.push_back(title);
  }
  if (blocks.empty()) return std::nullopt;
  std::ostringstream gp;
  gp << "# Language-model loss per position, mean over seeds.\n"
     << "# Re-render: cd to this directory and run `gnuplot loss_by_position.gp`.\n"
     << plot_preamble("loss_by_position.png", task_text(s) + ": held-out loss per position (mean over seeds)")
     << "set xlabel \"position in the context (bucket middle)\"\n"
     << "set ylabel \"loss\"\n"
     << "set xrange [0:*]\n";
  for (std::size_t t : train_lens) {
    gp << "set arrow from " << t << ", graph 0 to " << t << ", graph 1 nohead dt 2 lw 1.5 lc rgb \"#555555\"\n";
    gp << "set label " << gp_string(train_lens.size() == 1 ? "training context" : "training context " + std::to_string(t))
       << " at " << t << ", graph 0.5 center rotate by 90 offset -1,0 textcolor rgb \"#555555\"\n";
  }
  gp << "plot \\\n";
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto [g, idx] = blocks[b];
    gp << "  " << (b == 0 ? "\"loss_by_position.dat\"" : "\"\"") << " index " << idx
       << " using 3:4 with linespoints lw 2 pt " << plot_point_type(g) << " lc rgb \"" << plot_color(g) << "\" title "
       << gp_string(titles[b]) << (b + 1 < blocks.size() ? ", \\\n" : "\n");
  }
  Script sc{"loss_by_position", dat.str(), gp.str(), ""};
  sc.caption = "Held-out language-model loss per position bucket (eval.json buckets), mean over seeds, at the "
               "longest eval length each group could be evaluated at (in its legend entry); the dashed vertical "
               "line is the training context.";
  return sc;
}

}  // namespace report_detail
}  // namespace pelab
