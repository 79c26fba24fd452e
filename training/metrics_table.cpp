#include "training/metrics_table.hpp"

#include "core/params/param_spec.hpp"  // nearest

namespace pelab {

const std::vector<MetricSpec>& metric_table() {
  static const std::vector<MetricSpec> table = {
      {"loss", "loss", true, false, true, false, true,
       [](const TokenStats& s) { return s.counted ? s.loss_sum / double(s.counted) : 0.0; }},
      {"token_acc", "token accuracy (%)", false, true, true, true, false,
       [](const TokenStats& s) { return s.token_acc(); }},
      {"exact_match", "exact match (%)", false, true, false, true, false,
       [](const TokenStats& s) { return s.exact_match(); }},
  };
  return table;
}

std::vector<std::string> metric_names() {
  std::vector<std::string> names;
  for (const auto& m : metric_table()) names.push_back(m.name);
  return names;
}

const MetricSpec& find_metric(const std::string& name) {
  for (const auto& m : metric_table())
    if (m.name == name) return m;
  std::string msg = "unknown metric '" + name + "'";
  if (auto n = nearest(name, metric_names())) msg += " (did you mean '" + *n + "'?)";
  msg += "; known metrics: ";
  for (const auto& m : metric_table()) msg += (&m == &metric_table().front() ? "" : ", ") + m.name;
  throw Error(msg);
}

MetricValues compute_metrics(const TokenStats& s, bool is_lm) {
  MetricValues v;
  for (const auto& m : metric_table())
    if (m.for_lm || !is_lm) v[m.name] = m.compute(s);
  return v;
}

const MetricSpec& headline_metric(bool any_lm, bool any_sequence) {
  for (const auto& m : metric_table())
    if ((any_lm && m.shown_for_lm) || (any_sequence && m.shown_for_sequence)) return m;
  return metric_table().front();
}

bool reaches(const MetricSpec& m, double value, double target) {
  return m.lower_is_better ? value <= target : value >= target;
}

}  // namespace pelab
