// The in-distribution validation split of the protocol features (docs/usage.md, "Protocol" and "Budget
// policies"): what [protocol] select chooses on and what budget "competent" watches, never the test set
// the run reports, never a length beyond training.
//
// The split: held-out examples at train_len drawn like the evaluation's (experiments/eval/evaluate.cpp) from
// eval.seed XOR kValidationSeed, so a draw apart from the test set's. Both are random draws: for a task with
// few distinct problems at train_len they can share examples (as the test set can share some with training).
//
// A run with needs_validation evaluates it at every periodic evaluation (metrics.jsonl records of split
// "validation") and once at the end, into RUN/validation.json (written before eval.json):
//   {"split": "validation", "length": 16, "samples": 256, "seed": ..., "metric": "exact_match",
//    "value": 0.93, "metrics": {...}, "steps": 2500, "status": "early_stopped", "budget": "competent"}
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/eval/evaluate.hpp"

namespace pelab {

constexpr std::uint64_t kValidationSeed = 0x76616c6964617465ull;  // "validate"

// [protocol] select is set, or [train] budget = "competent".
bool needs_validation(const ExperimentConfig& cfg);
// [protocol] metric, or the task's headline metric when it is "".
std::string validation_metric(const ExperimentConfig& cfg, const Task& task);
// The split at train_len, on the model as it is (the caller puts it in eval mode).
LengthResult evaluate_validation(Transformer& model, const Task& task, const ExperimentConfig& cfg,
                                 const EvalOptions& opt);
// Budget "competent": the gate's threshold on early_stop_metric, chance + gate x (1 - chance) with the
// task's chance level at train_len for token_acc and exact_match; nullopt otherwise (the trainer then uses
// early_stop_target).
std::optional<double> gate_threshold(const ExperimentConfig& cfg, const Task& task);

// RUN/validation.json, written atomically.
void write_validation(const std::string& run_dir, const ExperimentConfig& cfg, const Task& task,
                      const LengthResult& r, std::size_t steps, const std::string& status);
// A run's validation.json: the selection's value and the steps used; nullopt when the file is missing.
// Throws Error naming the file when it cannot be read.
struct ValidationRecord {
  std::string metric;
  std::optional<double> value;  // nullopt: n/a at train_len
  std::size_t steps = 0;
  std::string status;
};
std::optional<ValidationRecord> read_validation(const std::string& run_dir);

}  // namespace pelab
