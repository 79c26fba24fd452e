// The metrics, in one table: what each is called, how it is shown, which way is better and how it is
// computed from the token statistics of a held-out set. Evaluation computes every metric that applies,
// run files store them by name, and early stopping, the report, sweep summaries and the CLI take their
// choices, titles and directions from here: adding a metric is adding an entry.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "training/metrics.hpp"  // TokenStats

namespace pelab {

// Metric name -> value; a metric that does not apply (exact match of a language model) is absent.
using MetricValues = std::map<std::string, double>;

struct MetricSpec {
  std::string name;            // the key in eval.json, metrics.jsonl and summary.csv: "token_acc"
  std::string title;           // "token accuracy (%)"
  bool lower_is_better = false;
  bool percent = false;        // shown x100
  bool for_lm = true;          // language-model tasks report it (sequence tasks report every metric)
  bool shown_for_sequence = false, shown_for_lm = false;  // a table of its own in summary.md
  std::function<double(const TokenStats&)> compute;
};

// In the order files and tables list them.
const std::vector<MetricSpec>& metric_table();
const MetricSpec& find_metric(const std::string& name);  // Error naming the known metrics
std::vector<std::string> metric_names();

// Every metric that applies to the task kind, computed from `s` (s.loss_sum holds the summed loss).
MetricValues compute_metrics(const TokenStats& s, bool is_lm);

// The metric a table or summary leads with: the first shown for a task kind present (sequence tasks:
// token_acc; language models: loss; both: loss).
const MetricSpec& headline_metric(bool any_lm, bool any_sequence);

// `value` meets `target` in the metric's direction (loss <= target, accuracies >= target).
bool reaches(const MetricSpec& m, double value, double target);

}  // namespace pelab
