// eval.json: what a finished run evaluated, written by the run (experiments/run/run.cpp) and read by the
// report and sweep summaries, through the one to_json / eval_result_from_json pair below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/params/value.hpp"
#include "training/metrics_table.hpp"

namespace pelab {

struct Bucket {
  std::size_t from = 0, to = 0;  // positions [from, to)
  double loss = 0;
};

// One evaluation length.
struct LengthResult {
  std::size_t length = 0;
  bool in_distribution = false;
  bool ok = true;                // false: "n/a"
  std::string reason;            // why n/a
  MetricValues metrics;          // every metric that applies to the task (training/metrics_table.hpp)
  // Sequence tasks: the chance level at this length (Task::chance), as "token_acc" and "exact_match";
  // empty for language models (and in eval.json files written before it existed). Set for n/a lengths too.
  MetricValues chance;
  std::vector<Bucket> buckets;   // LM only: loss per position bucket
  std::size_t samples = 0;
  // [eval] operand_grid cells: the operand lengths (length = the longer); absent for per-length results.
  std::optional<std::size_t> len_a, len_b;
  std::optional<double> metric(const std::string& name) const;  // nullopt when n/a or not reported
};

// The out-of-distribution score: each metric's mean over the evaluated lengths above the training
// length (Delétang et al. 2023 score a model by its mean accuracy over the lengths beyond training).
// Lengths reported n/a are left out of the means and counted in `n_a`.
struct OodScore {
  std::vector<std::size_t> lengths;  // the lengths averaged (ok ones)
  std::size_t n_a = 0;
  MetricValues metrics;
};
// Empty lengths (and no metrics) when no length above train_len was evaluated with a result.
OodScore ood_score(const std::vector<LengthResult>& results, std::size_t train_len);

// A finished run.
struct EvalResult {
  std::optional<std::size_t> cell;  // the sweep cell's index in its grid (absent for a plain run)
  std::string label;                // the sweep cell's label ("" for a plain run)
  std::vector<std::pair<std::string, Value>> assignment;  // its swept keys, in grid order
  std::string encoding, task;
  bool is_lm = false;
  std::size_t train_len = 0;        // the task's largest training problem size
  std::uint64_t seed = 0;
  std::size_t steps = 0;
  std::string status;               // trainer status: finished | early_stopped
  double final_train_loss = 0, train_seconds = 0, eval_seconds = 0;
  std::size_t parameters = 0;
  std::vector<LengthResult> results;
  // [eval] operand_grid: one result per (len_a, len_b) cell, eval.json's "operand_grid" (absent when none).
  std::vector<LengthResult> operand_grid;
  // A named re-evaluation (`pelab eval RUN --name NAME --set ...`, file RUN/eval-NAME.json): its name and
  // settings; both empty in the training's eval.json.
  std::string eval_name;
  std::vector<std::string> eval_settings;
  // What produced it (experiments/run/provenance.hpp): version, build, CPU, BLAS kernel, SIMD, threads;
  // null in files written before it existed.
  nlohmann::ordered_json provenance;
};

nlohmann::ordered_json to_json(const LengthResult& r);
nlohmann::ordered_json to_json(const EvalResult& r);  // with "ood": ood_score(results, train_len)
nlohmann::ordered_json to_json(const OodScore& s);
// The inverse of to_json; throws Error "FILE: where: what" for anything malformed (`file` names the
// source in messages).
EvalResult eval_result_from_json(const nlohmann::ordered_json& j, const std::string& file);
// Reads and parses an eval.json.
EvalResult read_eval_result(const std::string& path);

}  // namespace pelab
