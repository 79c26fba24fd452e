// Evaluation on a 2-D grid of operand lengths ([eval] operand_grid): a two-operand task (addition) at
// every (len a, len b), as McLeish et al. 2024 (arithmetic_eval_quicker.py: exact match per cell of a
// 1..N x 1..N grid) and Cho et al. 2024 (evaluate_model_heatmap.py) report it.
#pragma once

#include <string>
#include <vector>

#include "experiments/eval/evaluate.hpp"

namespace pelab {

// One cell: the metrics of eval.samples held-out examples with operands of len_a and len_b digits, drawn
// like the per-length sets (fixed by eval.seed and the two lengths), position ids per [eval] positions.
// length = max(len_a, len_b); in distribution when both lie in [min_len, train_len].
LengthResult evaluate_operands(Transformer& model, const Task& task, const EvalConfig& ecfg,
                               const PositionConfig& positions, std::size_t len_a, std::size_t len_b,
                               std::size_t min_len, std::size_t train_len);

// Every cell of the run's [eval] operand_grid (empty when none), a lengths loop (len_b fastest), in eval mode.
std::vector<LengthResult> evaluate_grid(Transformer& model, const RunSpec& spec, const EvalOptions& opt = {});

// The grid's exact match (%) as a table, one row per len_a and one column per len_b ("n/a" where a cell
// could not be evaluated), for `pelab eval`'s console output.
std::string format_grid(const std::vector<LengthResult>& grid);

}  // namespace pelab
