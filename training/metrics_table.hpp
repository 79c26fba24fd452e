// The metrics: what each is called, how it is shown, which way is better and how it is computed from
// token statistics (of a held-out set, or of a training log interval). Each metric is one file in
// training/metrics/ that registers itself with PELAB_REGISTER_METRIC; evaluation, metrics.jsonl,
// early stopping, the report, sweep summaries and the CLI take their choices, titles and directions
// from the registered metrics: adding a metric is adding a file.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "training/metrics.hpp"  // TokenStats

namespace pelab {

// Metric name -> value; a metric that does not apply (exact match of a language model) is absent.
using MetricValues = std::map<std::string, double>;

enum class Better { lower, higher };

struct MetricSpec {
  std::string name;            // the key in eval.json, metrics.jsonl and summary.csv: "token_acc"
  std::string title;           // "token accuracy (%)"
  bool lower_is_better = false;
  bool percent = false;        // shown x100
  bool for_lm = true;          // language-model tasks report it (sequence tasks report every metric)
  bool shown_for_sequence = false, shown_for_lm = false;  // a table of its own in summary.md
  // Where files, tables and `pelab list` put it: ascending, unique (registration order across files is
  // not fixed, so it cannot decide). The built-ins use 10, 20, 30.
  int list_position = -1;
  std::function<double(const TokenStats&)> compute;
  // Its value in a training record (metrics.jsonl, split "train") from the log interval's statistics
  // and the mean of its step losses; unset: compute(statistics).
  std::function<double(const TokenStats&, double mean_step_loss)> compute_in_training;

  // Named setters, chained on metric(...) below, so that a registration reads without opening this struct.
  MetricSpec listed_at(int position) const;
  MetricSpec in_percent() const;
  MetricSpec sequence_tasks_only() const;
  MetricSpec own_table_for_sequence_tasks() const;
  MetricSpec own_table_for_language_models() const;
  MetricSpec in_training_records(std::function<double(const TokenStats&, double mean_step_loss)> f) const;
};

// metric("token_acc", "token accuracy (%)", Better::higher, [](const TokenStats& s) { return s.token_acc(); })
//     .listed_at(20).in_percent().own_table_for_sequence_tasks()
MetricSpec metric(std::string name, std::string title, Better better, std::function<double(const TokenStats&)> compute);

// Every registered metric, in list_position order.
const std::vector<MetricSpec>& metric_table();
const MetricSpec& find_metric(const std::string& name);  // Error naming the known metrics
std::vector<std::string> metric_names();                 // in list_position order

// Every metric that applies to the task kind, computed from `s` (s.loss_sum holds the summed loss).
MetricValues compute_metrics(const TokenStats& s, bool is_lm);

// A training record's metrics for a log interval: as compute_metrics, each through its
// compute_in_training when set. An interval without answer spans (s.rows == 0) is a language model's.
MetricValues compute_training_metrics(const TokenStats& s, double mean_step_loss);

// The metric a table or summary leads with: the first shown for a task kind present (sequence tasks:
// token_acc; language models: loss; both: loss).
const MetricSpec& headline_metric(bool any_lm, bool any_sequence);

// `value` meets `target` in the metric's direction (loss <= target, accuracies >= target).
bool reaches(const MetricSpec& m, double value, double target);

// Adds `spec` to the table; throws Error on a name or list position registered twice, or none.
struct MetricRegistrar {
  explicit MetricRegistrar(MetricSpec spec);
};

}  // namespace pelab

#define PELAB_REGISTER_METRIC(ident, ...) \
  static const ::pelab::MetricRegistrar pelab_metric_registrar_##ident(__VA_ARGS__)
