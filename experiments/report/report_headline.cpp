// The answer first: report.html's headline, which group is best beyond the training length, by how much,
// and whether the seeds separate it from the runner-up.
//
// The tie rule is the recipe pages' (python/pelab/reproduce/stats.py: separated, tie_ranks; its words are
// common.py's TIE_TEXT). It is defined there; tie_groups below is a line-for-line port, because the report
// must not need Python and the null simulations call the rule thousands of times without a binary. The
// two are held together by one case file both test suites run: tests/scripts/tie_rule_cases.json
// (tests/experiments/test_report_headline.cpp, tests/scripts/test_tie_rule_cases.py).
#include <algorithm>
#include <cmath>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

bool separated(const SeedStats& a, const SeedStats& b) {
  if (!a.mean || !b.mean || a.n < 2 || b.n < 2) return false;
  return *a.mean - a.std > *b.mean + b.std;
}

std::vector<std::vector<std::size_t>> tie_groups(const std::vector<SeedStats>& stats) {
  std::vector<std::size_t> order(stats.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Python's sorted is stable: key (no mean, -mean).
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    const bool nx = !stats[x].mean, ny = !stats[y].mean;
    if (nx != ny) return ny;
    return !nx && -*stats[x].mean < -*stats[y].mean;
  });
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t k : order) {
    if (!groups.empty()) {
      const SeedStats& last = stats[groups.back().back()];
      const bool both_none = !stats[k].mean && !last.mean;
      if (both_none || (stats[k].mean && !separated(last, stats[k]))) {
        groups.back().push_back(k);
        continue;
      }
    }
    groups.push_back({k});
  }
  return groups;
}

namespace {

// The groups a headline compares: per task when the sweep spans several (scores of different tasks are
// not comparable), else all.
std::vector<std::vector<std::size_t>> headline_sets(const Sweep& s) {
  const auto key = std::find(s.group_keys.begin(), s.group_keys.end(), std::string(kTaskKey));
  if (s.tasks.size() < 2 || key == s.group_keys.end()) {
    std::vector<std::size_t> all(s.groups.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return {all};
  }
  const std::size_t at = static_cast<std::size_t>(key - s.group_keys.begin());
  std::vector<std::vector<std::size_t>> out;
  for (const std::string& task : s.tasks) {
    std::vector<std::size_t> set;
    for (std::size_t i = 0; i < s.groups.size(); ++i)
      if (at < s.groups[i].values.size() && s.groups[i].values[at] == task) set.push_back(i);
    if (!set.empty()) out.push_back(set);
  }
  return out;
}

std::string stats_text(const SeedStats& st, const std::string& metric) {
  return value_text(*st.mean, metric) + " ± " + value_text(st.std, metric) + " (n = " + std::to_string(st.n) + ")";
}

// One sentence for the groups `set`: best beyond training, the margin to the runner-up, and the tie rule.
std::string headline_for(const Sweep& s, const std::vector<std::size_t>& set, const MetricSpec& m) {
  std::vector<SeedStats> stats;
  for (std::size_t gi : set) {
    SeedStats st = ood_seed_stats(s.groups[gi], m.name);
    if (st.mean && m.lower_is_better) st.mean = -*st.mean;  // the rule ranks higher first
    stats.push_back(st);
  }
  const auto groups = tie_groups(stats);
  const std::size_t best = groups.front().front();
  if (!stats[best].mean) return "";
  const auto real = [&](std::size_t i) {
    SeedStats st = stats[i];
    if (m.lower_is_better) st.mean = -*st.mean;
    return st;
  };
  const std::string unit = m.percent ? " points" : "";
  std::string out = "Beyond the training length, the best " + m.title + " is " + s.groups[set[best]].label + "'s: " +
                    stats_text(real(best), m.name);
  if (stats.size() < 2) return out + ", the only group.";
  std::size_t second = 0;
  bool found = false;
  for (const auto& g : groups)
    for (std::size_t i : g)
      if (i != best && !found && stats[i].mean) {
        second = i;
        found = true;
      }
  if (!found) return out + "; no other group has a score beyond training.";
  const double gap = std::fabs(*stats[best].mean - *stats[second].mean);
  out += ", " + value_text(gap, m.name) + unit + (m.lower_is_better ? " below " : " above ") + "the next, " +
         s.groups[set[second]].label + " (" + stats_text(real(second), m.name) + "). ";
  if (groups.front().size() > 1) {
    std::string tied;
    for (std::size_t i : groups.front())
      if (i != best) tied += (tied.empty() ? "" : ", ") + s.groups[set[i]].label;
    return out + "A tie within the seed spread: the seeds do not separate it from " + tied + ".";
  }
  return out + "The seeds separate the two: the order holds.";
}

}  // namespace

std::vector<std::string> headline(const Sweep& s, const std::string& metric) {
  const MetricSpec& m = find_metric(metric);
  std::vector<std::string> out;
  for (const auto& set : headline_sets(s)) {
    std::string h = headline_for(s, set, m);
    if (h.empty()) continue;
    if (set.size() < s.groups.size()) {
      const std::size_t at = static_cast<std::size_t>(
          std::find(s.group_keys.begin(), s.group_keys.end(), std::string(kTaskKey)) - s.group_keys.begin());
      h = s.groups[set.front()].values[at] + ": " + h;
    }
    out.push_back(h);
  }
  return out;
}

std::string tie_rule_text() {
  return "Each run's score is its mean " + std::string("over the eval lengths above its training length; ") +
         "an order between two groups holds only when their seed-level scores separate: mean − sample std of the "
         "higher > mean + sample std of the lower (over seeds; a group with one seed separates from nothing); "
         "otherwise it is a tie (the recipe pages' rule, docs/reproductions.md).";
}

}  // namespace report_detail
}  // namespace pelab
