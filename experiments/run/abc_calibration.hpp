// The middle step of `pelab abc` (experiments/cli/abc.cpp): the attention biases of a trained run that
// interpolates, extracted and extended (Duan et al., arXiv 2310.11984, Section 5 steps 1-2; the arithmetic
// is layers/positional/abc_bias.hpp's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/run/trained_run.hpp"
#include "layers/positional/abc_bias.hpp"

namespace pelab {

struct AbcCalibration {
  std::size_t layer = 0;      // 1-based; 0: the last (the paper's: "the last decoder layer")
  double lambda = 0.87;       // dropout threshold mean + lambda std (the paper: 0.87 self-, 4.5 cross-attention)
  double masked = -1e4;       // the value of a line not kept (the paper's -inf)
  std::size_t samples = 256;  // held-out examples of the training length the probabilities are averaged over
  std::uint64_t seed = 0;     // which examples
};

struct AbcCalibrated {
  AbcBias bias;
  std::vector<std::string> notes;  // what it was made from, for the bias file's comments
};

// The lines of layer `layer` (0-based) of a loaded run: `samples` held-out examples of its largest training
// size, with the position ids its evaluation assigns ([eval] positions: eval_positions), the attention
// probabilities of the rows whose targets count summed per id difference (accumulate_abc_lines).
AbcLines calibration_lines(TrainedRun& run, const AbcCalibration& c, std::size_t layer);

// Loads the finished run in run_dir, runs `samples` held-out examples of its largest training size with
// the position ids of its evaluation, keeping layer `layer`'s attention probabilities at the rows whose targets count (the
// queries that answer), and calibrates them (calibrate_abc). Throws Error for a run it cannot read, a
// language-model task or a layer the model does not have.
AbcCalibrated calibrate_run(const std::string& run_dir, const AbcCalibration& c);

}  // namespace pelab
