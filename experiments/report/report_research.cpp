// Tables a paper reports beside accuracy: steps to target (from each run's held-out evaluations) and,
// for sweeps over several tasks, ranks and mean reciprocal rank. Definitions: report_detail.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {
namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < xs.size(); ++i) out += (i ? sep : "") + xs[i];
  return out;
}

void add_unique(std::vector<std::string>& xs, const std::string& x) {
  if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
}

}  // namespace

TargetResult steps_to_target(const Run& r) {
  TargetResult t;
  if (r.settings.early_stop_metric.empty()) return t;
  t.has_target = true;
  t.metric = r.settings.early_stop_metric;
  t.target = r.settings.early_stop_target;
  const MetricSpec& m = find_metric(t.metric);
  for (const HeldOut& h : r.held_out) {
    auto it = h.metrics.find(t.metric);
    if (it != h.metrics.end() && reaches(m, it->second, t.target)) {
      t.step = h.step;
      break;
    }
  }
  return t;
}

std::string target_text(const std::string& metric, double target) {
  const MetricSpec& m = find_metric(metric);
  const std::string op = m.lower_is_better ? " ≤ " : " ≥ ";
  return metric + op + (m.percent ? fmt("%g", 100 * target) + "%" : fmt("%g", target));
}

std::optional<Table> steps_table(const Sweep& s) {
  bool any = false;
  for (const Run& r : s.runs) any = any || !r.settings.early_stop_metric.empty();
  if (!any) return std::nullopt;
  Table t;
  t.id = "steps-to-target";
  t.title = "steps to target: " + title_line(s);
  t.n_left = s.group_keys.size();
  t.header = s.group_keys;
  for (const char* h : {"target", "steps to target", "reached", "eval every", "step limit"}) t.header.push_back(h);
  bool any_unevaluated = false;
  for (const Group& g : s.groups) {
    std::vector<std::string> targets, every, limit;
    std::vector<double> steps;
    int with_target = 0, evaluated = 0;
    for (const Run* r : g.runs) {
      const TargetResult tr = steps_to_target(*r);
      add_unique(every, r->settings.known ? std::to_string(r->settings.eval_every) : "?");
      add_unique(limit, r->settings.known ? std::to_string(r->settings.steps) : "?");
      if (!tr.has_target) continue;
      ++with_target;
      add_unique(targets, target_text(tr.metric, tr.target));
      if (!r->held_out.empty()) ++evaluated;
      if (tr.step) steps.push_back(static_cast<double>(*tr.step));
    }
    std::vector<std::string> row = g.values;
    row.push_back(targets.empty() ? "none" : join(targets, " / "));
    std::string cell = "-";
    if (with_target > 0 && evaluated == 0) {
      any_unevaluated = true;
    } else if (!steps.empty()) {
      cell = mean_std_cell(mean_std(steps), [](double v) { return fmt("%.0f", v); });
    } else if (with_target > 0) {
      cell = "not reached";
    }
    row.push_back(cell);
    row.push_back(with_target ? std::to_string(steps.size()) + "/" + std::to_string(with_target) : "-");
    row.push_back(join(every, " / "));
    row.push_back(join(limit, " / "));
    t.rows.push_back(row);
    t.reference.push_back(false);
  }
  t.notes.push_back(
      "Steps to target: the first held-out evaluation (at train_len, on the [eval] held-out set, every \"eval "
      "every\" steps and at the end) at which the run's early-stop metric met its target, so a value s means the "
      "target was first met after step s − eval every and by step s. Mean ± sample std over the runs that reached "
      "it; \"reached\" counts them. A run that never reached the target within its step limit is not in the mean: "
      "2/3 means one run had not reached it when it ended (steps_to_target.csv lists every run).");
  if (any_unevaluated)
    t.notes.push_back("\"-\" with a target: no held-out evaluation was logged (eval_every = 0).");
  return t;
}

std::string steps_csv(const Sweep& s) {
  std::ostringstream os;
  for (const std::string& k : s.group_keys) os << csv_field(k) << ",";
  os << "run,seed,status,steps,eval_every,step_limit,target_metric,target,steps_to_target,reached\n";
  for (const Group& g : s.groups) {
    for (const Run* r : g.runs) {
      const TargetResult tr = steps_to_target(*r);
      for (const std::string& v : g.values) os << csv_field(v) << ",";
      os << csv_field(r->dir_name) << "," << r->seed << "," << csv_field(r->status) << "," << r->steps << ",";
      if (r->settings.known) os << r->settings.eval_every << "," << r->settings.steps;
      else os << ",";
      os << ",";
      if (tr.has_target) {
        os << tr.metric << "," << full_precision(tr.target) << "," << (tr.step ? std::to_string(*tr.step) : "") << ","
           << (tr.step ? "true" : "false");
      } else {
        os << ",,,";
      }
      os << "\n";
    }
  }
  return os.str();
}

std::vector<double> average_ranks(const std::vector<std::optional<double>>& scores, bool lower_is_better) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  auto better = [&](std::size_t a, std::size_t b) {  // strict: scored before unscored, then by direction
    if (scores[a].has_value() != scores[b].has_value()) return scores[a].has_value();
    if (!scores[a]) return false;
    return lower_is_better ? *scores[a] < *scores[b] : *scores[a] > *scores[b];
  };
  std::stable_sort(order.begin(), order.end(), better);
  std::vector<double> rank(scores.size(), 0);
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;  // [i, j): tied with order[i]
    while (j < order.size() && !better(order[i], order[j]) && !better(order[j], order[i])) ++j;
    const double avg = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // mean of ranks i+1..j
    for (std::size_t k = i; k < j; ++k) rank[order[k]] = avg;
    i = j;
  }
  return rank;
}

namespace {

// The rows of a rank table: a group's values without the task key (one row per such combination, over
// its tasks).
struct RankRows {
  std::ptrdiff_t task_col = 0;               // index of the task key in Sweep::group_keys
  std::vector<std::string> keys;             // the group keys but the task
  std::vector<std::vector<std::string>> rows;  // first-appearance order

  std::vector<std::string> row_of(const Group& g) const {
    std::vector<std::string> v;
    for (std::size_t k = 0; k < g.values.size(); ++k)
      if (static_cast<std::ptrdiff_t>(k) != task_col) v.push_back(g.values[k]);
    return v;
  }
  std::size_t index_of(const Group& g) const { return std::find(rows.begin(), rows.end(), row_of(g)) - rows.begin(); }
};

RankRows rank_rows(const Sweep& s) {
  RankRows rr;
  rr.task_col = std::find(s.group_keys.begin(), s.group_keys.end(), kTaskKey) - s.group_keys.begin();
  for (std::size_t k = 0; k < s.group_keys.size(); ++k)
    if (static_cast<std::ptrdiff_t>(k) != rr.task_col) rr.keys.push_back(s.group_keys[k]);
  for (const Group& g : s.groups) {
    const auto v = rr.row_of(g);
    if (std::find(rr.rows.begin(), rr.rows.end(), v) == rr.rows.end()) rr.rows.push_back(v);
  }
  return rr;
}

struct RankColumn {
  std::string task;
  std::vector<std::size_t> ood;                       // lengths scored
  std::vector<std::optional<double>> rank, score;     // per row (nullopt rank: row did not run the task)
};

// One task's column: its out-of-distribution lengths (some group of the task evaluated there), each
// group's score (mean over those lengths; nullopt when n/a at one) and rank. nullopt when the task
// cannot be ranked (fewer than two groups, or no length beyond training).
std::optional<RankColumn> rank_column(const Sweep& s, const std::string& task, const std::string& metric,
                                      const RankRows& rr) {
  std::vector<const Group*> gs;
  for (const Group& g : s.groups)
    if (g.runs.front()->task == task) gs.push_back(&g);
  RankColumn c;
  c.task = task;
  for (std::size_t len : s.lengths)
    for (const Group* g : gs) {
      const CellStats cs = cell_stats(*g, len, metric);
      if (cs.present && !cs.in_distribution) {
        c.ood.push_back(len);
        break;
      }
    }
  if (gs.size() < 2 || c.ood.empty()) return std::nullopt;
  std::vector<std::optional<double>> scores;
  for (const Group* g : gs) {
    double sum = 0;
    bool ok = true;
    for (std::size_t len : c.ood) {
      const CellStats cs = cell_stats(*g, len, metric);
      ok = ok && cs.n > 0;
      sum += cs.mean;
    }
    scores.push_back(ok ? std::optional<double>(sum / static_cast<double>(c.ood.size())) : std::nullopt);
  }
  const std::vector<double> ranks = average_ranks(scores, find_metric(metric).lower_is_better);
  c.rank.assign(rr.rows.size(), std::nullopt);
  c.score.assign(rr.rows.size(), std::nullopt);
  for (std::size_t i = 0; i < gs.size(); ++i) {
    const std::size_t r = rr.index_of(*gs[i]);
    c.rank[r] = ranks[i];
    c.score[r] = scores[i];
  }
  return c;
}

// Each row's cells "rank (score)" per task and its MRR, into t.rows sorted by MRR (best first); rows
// without a rank anywhere last. Returns whether some row did not run some task.
bool add_rank_rows(Table& t, const RankRows& rr, const std::vector<RankColumn>& cols, const std::string& metric) {
  std::vector<std::pair<double, std::vector<std::string>>> out;
  bool partial = false;
  for (std::size_t r = 0; r < rr.rows.size(); ++r) {
    std::vector<std::string> row = rr.rows[r];
    double sum = 0;
    int n = 0;
    for (const RankColumn& c : cols) {
      if (!c.rank[r]) {
        row.push_back("-");
        partial = true;
        continue;
      }
      const double k = *c.rank[r];
      row.push_back((k == std::floor(k) ? fmt("%.0f", k) : fmt("%.1f", k)) + " (" +
                    (c.score[r] ? value_text(*c.score[r], metric) : "n/a") + ")");
      sum += 1 / k;
      ++n;
    }
    const double mrr = n ? sum / n : 0;
    row.push_back(n ? fmt("%.3f", mrr) : "-");
    out.emplace_back(n ? mrr : -1, row);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [mrr, row] : out) {
    t.rows.push_back(row);
    t.reference.push_back(false);
  }
  return partial;
}

void add_rank_notes(Table& t, const std::vector<RankColumn>& cols, const MetricSpec& m, bool partial,
                    const std::vector<std::string>& skipped) {
  std::vector<std::string> ood_text;
  for (const RankColumn& c : cols) {
    ood_text.push_back(c.task + ": " + length_list_text(c.ood));
  }
  t.notes.push_back("Per task, rows are ranked (1 = best) by their score in brackets: the mean over the task's "
                    "out-of-distribution eval lengths (" + join(ood_text, "; ") + ") of the row's " + m.name +
                    " (mean over seeds). A row n/a at any of those lengths has no score and ranks after every "
                    "scored row; equal scores share the average of their ranks. MRR: the mean over tasks of 1 / rank; "
                    "rows are sorted by it.");
  if (partial) t.notes.push_back("\"-\": the row did not run that task; its MRR is over the tasks it ran.");
  if (!skipped.empty())
    t.notes.push_back("Not ranked (fewer than two rows or no length beyond training): " + join(skipped, ", ") + ".");
}

}  // namespace

std::optional<Table> rank_table(const Sweep& s, const std::string& metric) {
  if (s.tasks.size() < 2) return std::nullopt;
  const MetricSpec& m = find_metric(metric);
  const RankRows rr = rank_rows(s);
  if (rr.keys.empty()) return std::nullopt;  // only the task varies: nothing to rank
  std::vector<RankColumn> cols;
  std::vector<std::string> skipped;
  for (const std::string& task : s.tasks) {
    if (auto c = rank_column(s, task, metric, rr)) cols.push_back(*c);
    else skipped.push_back(task);
  }
  if (cols.size() < 2) return std::nullopt;

  Table t;
  t.id = "rank-" + metric;
  t.title = "rank by " + m.title + " beyond the training length, per task";
  t.n_left = rr.keys.size();
  t.header = rr.keys;
  for (const RankColumn& c : cols) t.header.push_back(c.task);
  t.header.push_back("MRR");
  const bool partial = add_rank_rows(t, rr, cols, metric);
  add_rank_notes(t, cols, m, partial, skipped);
  return t;
}

}  // namespace report_detail
}  // namespace pelab
