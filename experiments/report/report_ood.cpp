// The score beyond the training length per group: each run's out-of-distribution score (eval.json's
// "ood": a metric's mean over the evaluated lengths above train_len), then mean ± std, min and max
// over the group's seeds. Delétang et al. 2023 and Ruoss et al. 2023 report the maximum over seeds
// (and learning rates); the mean is printed beside it so the two are never confused.
#include <algorithm>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

namespace {

struct OodStats {
  std::vector<double> scores;       // one per run with a score
  std::vector<std::size_t> lengths;  // the first scored run's lengths
  std::size_t n_a = 0;               // runs with an n/a length beyond training
};

OodStats ood_stats(const Group& g, const std::string& metric) {
  OodStats st;
  for (const Run* r : g.runs) {
    const OodScore s = ood_score(r->results, r->train_len);
    if (s.n_a > 0) ++st.n_a;
    auto it = s.metrics.find(metric);
    if (it == s.metrics.end()) continue;
    if (st.scores.empty()) st.lengths = s.lengths;
    st.scores.push_back(it->second);
  }
  return st;
}

std::string lengths_text(const std::vector<std::size_t>& ls) {
  if (ls.empty()) return "-";
  if (ls.size() <= 3) {
    std::string s;
    for (std::size_t i = 0; i < ls.size(); ++i) s += (i ? ", " : "") + std::to_string(ls[i]);
    return s;
  }
  return std::to_string(ls.front()) + "..." + std::to_string(ls.back()) + " (" + std::to_string(ls.size()) + ")";
}

std::vector<std::string> ood_row(const Group& g, const OodStats& st, const std::string& metric) {
  std::vector<std::string> row = g.values;
  row.push_back(lengths_text(st.lengths));
  if (st.scores.empty()) {
    row.insert(row.end(), {"n/a", "n/a", "n/a"});
    return row;
  }
  const MeanStd m = mean_std(st.scores);
  const auto [lo, hi] = std::minmax_element(st.scores.begin(), st.scores.end());
  row.push_back(mean_std_cell(m, [&metric](double v) { return value_text(v, metric); }, std::to_string(st.scores.size())));
  row.push_back(value_text(*lo, metric));
  row.push_back(value_text(*hi, metric));
  return row;
}

}  // namespace

SeedStats ood_seed_stats(const Group& g, const std::string& metric) {
  const OodStats st = ood_stats(g, metric);
  SeedStats out;
  out.n = static_cast<int>(st.scores.size());
  if (st.scores.empty()) return out;
  const MeanStd m = mean_std(st.scores);
  out.mean = m.mean;
  out.std = m.std;
  return out;
}

std::optional<Table> ood_table(const Sweep& s, const std::string& metric) {
  Table t;
  t.id = "ood-" + metric;
  t.title = find_metric(metric).title + " beyond the training length: " + title_line(s);
  t.n_left = s.group_keys.size();
  t.header = s.group_keys;
  t.header.insert(t.header.end(), {"lengths", "mean ± std (n)", "min", "max"});
  bool any = false, any_na = false;
  for (const Group& g : s.groups) {
    const OodStats st = ood_stats(g, metric);
    any = any || !st.scores.empty();
    any_na = any_na || st.n_a > 0;
    t.rows.push_back(ood_row(g, st, metric));
    t.reference.push_back(false);
  }
  if (!any) return std::nullopt;
  t.notes.push_back("Each run's score is the mean of " + metric +
                    " over its evaluated lengths above its training length (eval.json's \"ood\"); the columns are "
                    "the mean ± sample std, the minimum and the maximum of that score over the group's seeds. "
                    "Delétang et al. 2023 and Ruoss et al. 2023 report the maximum over seeds; compare like with like.");
  if (any_na)
    t.notes.push_back("Lengths a run reports n/a are left out of its mean (the lengths column lists the first "
                      "scored run's).");
  return t;
}

}  // namespace report_detail
}  // namespace pelab
