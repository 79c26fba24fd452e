// results.csv: every run's results as one long table (experiments/report/report.hpp, ResultsTable).
#include <sstream>

#include "experiments/report/report_detail.hpp"

namespace pelab {
namespace report_detail {

namespace {

// The run's value of each grouping key: its swept value, or for a sweep grouped by encoding (nothing
// swept but seeds) the encoding.
std::vector<std::optional<Value>> key_values(const Sweep& s, const Run& r) {
  std::vector<std::optional<Value>> out;
  for (const std::string& k : s.group_keys) {
    std::optional<Value> v;
    for (const auto& [rk, rv] : r.assignment)
      if (rk == k) v = rv;
    const bool by_encoding = s.group_keys.size() == 1 && k == "encoding";
    if (!v && by_encoding) v = Value(r.encoding + r.settings.features);
    out.push_back(v);
  }
  return out;
}

bool applies(const std::string& metric, const Run& r) { return !r.is_lm || find_metric(metric).for_lm; }

}  // namespace

ResultsTable results_table(const Sweep& s, const std::vector<std::string>& metrics) {
  ResultsTable t;
  t.keys = s.group_keys;
  for (const Run& r : s.runs) {
    ResultRow base;
    base.run = r.rel_dir.empty() ? r.dir_name : r.rel_dir;
    base.keys = key_values(s, r);
    base.seed = r.seed;
    base.task = r.task;
    base.train_len = r.train_len;
    std::vector<const LengthResult*> results;  // per length, then per operand_grid cell
    for (const LengthResult& lr : r.results) results.push_back(&lr);
    for (const LengthResult& lr : r.operand_grid) results.push_back(&lr);
    for (const LengthResult* p : results) {
      const LengthResult& lr = *p;
      base.eval_len = lr.length;
      base.len_a = lr.len_a, base.len_b = lr.len_b;
      base.in_distribution = lr.in_distribution;
      for (const std::string& m : metrics) {
        if (!applies(m, r)) continue;
        ResultRow row = base;
        row.metric = m;
        row.value = lr.metric(m);
        if (!lr.ok) row.na_reason = lr.reason;
        if (auto it = lr.chance.find(m); it != lr.chance.end()) row.chance = it->second;
        if (lr.ok && !row.value) continue;  // not reported by this run (an eval.json from before the metric)
        t.rows.push_back(row);
      }
    }
  }
  return t;
}

}  // namespace report_detail

std::string results_csv(const ResultsTable& t) {
  using report_detail::csv_field;
  using report_detail::full_precision;
  std::ostringstream os;
  os << "run,";
  for (const std::string& k : t.keys) os << csv_field(k) << ",";
  os << "seed,task,train_len,eval_len,len_a,len_b,in_distribution,metric,value,chance,na_reason\n";
  const auto size_field = [](const std::optional<std::size_t>& x) { return x ? std::to_string(*x) : std::string(); };
  for (const ResultRow& r : t.rows) {
    os << csv_field(r.run) << ",";
    for (const auto& v : r.keys) {
      os << (v ? csv_field(label_text(*v)) : "") << ",";  // doubles: the shortest text that reads back
    }
    os << r.seed << "," << csv_field(r.task) << "," << r.train_len << "," << r.eval_len << "," << size_field(r.len_a) << ","
       << size_field(r.len_b) << "," << (r.in_distribution ? "true" : "false") << "," << csv_field(r.metric) << ","
       << (r.value ? full_precision(*r.value) : "") << "," << (r.chance ? full_precision(*r.chance) : "") << ","
       << csv_field(r.na_reason) << "\n";
  }
  return os.str();
}

}  // namespace pelab
