// Evaluation in and beyond the training length.
//
// Sequence tasks: for each problem size n, token accuracy on y/EOS and exact match (greedy decoding;
// computed in one teacher-forced pass, see training/metrics.hpp) on a fixed held-out set per length.
// LM tasks: mean next-character loss at each context length and loss per position bucket.
// A length the encoding cannot represent (learned past its table) is reported "n/a" with the reason.
// Position ids follow [eval] positions (eval_positions below), drawn from a stream seeded like the
// held-out data, so every evaluation of a run sees the same ids.
#pragma once

#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/run/resources.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/transformer.hpp"

namespace pelab {

// The lengths of an [eval] length_range {from, to, step}: from, from + step, ... <= to.
std::vector<std::size_t> range_lengths(const std::vector<std::size_t>& range);

// The lengths to evaluate: cfg.eval.length_range expanded, cfg.eval.lengths, or defaults derived from
// the training length.
std::vector<std::size_t> eval_lengths(const ExperimentConfig& cfg, const Task& task);

// The position ids of evaluation: [eval] positions, with "train" meaning [train] positions (for
// randomized training that is randomized ids at evaluation too, as Ruoss et al. 2023 do), and
// [train] max_position as the range.
PositionConfig eval_positions(const ExperimentConfig& cfg);

// How an evaluation runs, beyond what it computes.
struct EvalOptions {
  // Rows per forward pass at lengths where eval.batch_size does not fit (check_memory). The held-out
  // examples stay those of eval.batch_size: each configured batch is drawn whole and run in slices.
  const EvalBatches* batches = nullptr;
  bool progress = false;  // on stdout: a line per length, then the batches (a line every 10 s off a terminal)
  bool stoppable = false;  // between forward passes, a requested stop throws Interrupted
};

// Why the model cannot read a batch's ids: a task's own position ids (positions task, task_offset) or
// digit indices (abacus) beyond what its encoding represents; nullopt when it can.
std::optional<std::string> ids_unsupported(const Transformer& model, const Batch& b, const PositionConfig& positions);

// Evaluates one length (NoGrad; the model is put in eval mode by the caller).
LengthResult evaluate_length(Transformer& model, const Task& task, const EvalConfig& ecfg,
                             const PositionConfig& positions, std::size_t n, std::size_t min_len,
                             std::size_t train_len, const EvalOptions& opt = {});

// Every length of the run's eval.lengths, in eval mode.
std::vector<LengthResult> evaluate_lengths(Transformer& model, const RunSpec& spec, const EvalOptions& opt = {});

// A plain-text table of results (one row per length, one column per metric), for the console.
std::string format_results(const std::vector<LengthResult>& rs, bool is_lm);

}  // namespace pelab
