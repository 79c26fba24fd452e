#include "training/metrics_table.hpp"

#include <algorithm>

#include "core/params/param_spec.hpp"  // nearest

namespace pelab {

namespace {

// Kept sorted by list_position as metrics register, so readers never sort.
std::vector<MetricSpec>& registered() {
  static std::vector<MetricSpec> table;
  return table;
}

}  // namespace

MetricSpec MetricSpec::listed_at(int position) const {
  MetricSpec m = *this;
  m.list_position = position;
  return m;
}

MetricSpec MetricSpec::in_percent() const {
  MetricSpec m = *this;
  m.percent = true;
  return m;
}

MetricSpec MetricSpec::sequence_tasks_only() const {
  MetricSpec m = *this;
  m.for_lm = false;
  return m;
}

MetricSpec MetricSpec::own_table_for_sequence_tasks() const {
  MetricSpec m = *this;
  m.shown_for_sequence = true;
  return m;
}

MetricSpec MetricSpec::own_table_for_language_models() const {
  MetricSpec m = *this;
  m.shown_for_lm = true;
  return m;
}

MetricSpec MetricSpec::in_training_records(std::function<double(const TokenStats&, double)> f) const {
  MetricSpec m = *this;
  m.compute_in_training = std::move(f);
  return m;
}

MetricSpec metric(std::string name, std::string title, Better better, std::function<double(const TokenStats&)> compute) {
  MetricSpec m;
  m.name = std::move(name);
  m.title = std::move(title);
  m.lower_is_better = better == Better::lower;
  m.compute = std::move(compute);
  return m;
}

MetricRegistrar::MetricRegistrar(MetricSpec spec) {
  std::vector<MetricSpec>& table = registered();
  if (spec.list_position < 0) throw Error("metric '" + spec.name + "' has no list position (listed_at)");
  for (const auto& m : table) {
    if (m.name == spec.name) throw Error("metric '" + spec.name + "' registered twice");
    if (m.list_position == spec.list_position)
      throw Error("metrics '" + m.name + "' and '" + spec.name + "' are both listed at " +
                  std::to_string(spec.list_position));
  }
  auto at = std::find_if(table.begin(), table.end(),
                         [&](const MetricSpec& m) { return m.list_position > spec.list_position; });
  table.insert(at, std::move(spec));
}

const std::vector<MetricSpec>& metric_table() { return registered(); }

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

MetricValues compute_training_metrics(const TokenStats& s, double mean_step_loss) {
  const bool is_lm = s.rows == 0;
  MetricValues v;
  for (const auto& m : metric_table())
    if (m.for_lm || !is_lm) v[m.name] = m.compute_in_training ? m.compute_in_training(s, mean_step_loss) : m.compute(s);
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
