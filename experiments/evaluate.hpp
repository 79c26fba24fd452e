// Evaluation in and beyond the training length.
//
// Sequence tasks: for each problem size n, token accuracy on y/EOS and exact match (greedy decoding;
// computed in one teacher-forced pass, see training/metrics.hpp) on a fixed held-out set per length.
// LM tasks: mean next-character loss at each context length and loss per position bucket.
// A length the encoding cannot represent (learned past its table) is reported "n/a" with the reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/config.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/transformer.hpp"

namespace pelab {

struct Bucket {
  std::size_t from = 0, to = 0;  // positions [from, to)
  double loss = 0;
};

struct LengthResult {
  std::size_t length = 0;
  bool in_distribution = false;
  bool ok = true;                // false: "n/a"
  std::string reason;            // why n/a
  double loss = 0, token_acc = 0;
  std::optional<double> exact_match;  // sequence tasks only
  std::vector<Bucket> buckets;        // LM only
  std::size_t samples = 0;
};

// The lengths to evaluate: cfg.eval.lengths, or defaults derived from the training length.
std::vector<std::size_t> eval_lengths(const ExperimentConfig& cfg, const Task& task);

// Evaluates one length (NoGrad; the model is put in eval mode by the caller).
LengthResult evaluate_length(Transformer& model, const Task& task, const EvalConfig& ecfg, std::size_t n,
                             std::size_t min_len, std::size_t train_len);

std::vector<LengthResult> evaluate_lengths(Transformer& model, const Task& task, const ExperimentConfig& cfg,
                                           const std::vector<std::size_t>& lengths);

nlohmann::ordered_json to_json(const LengthResult& r);
LengthResult length_result_from_json(const nlohmann::json& j);

// A plain-text table of results (one row per length), for the console.
std::string format_results(const std::vector<LengthResult>& rs, bool is_lm);

}  // namespace pelab
