// The attention biases of a trained run (abc_calibration.hpp).
#include "experiments/run/abc_calibration.hpp"

#include <algorithm>
#include <cstdio>

#include "core/tape.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/tasks/task.hpp"
#include "training/positions.hpp"
#include "training/signals.hpp"

namespace pelab {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

AbcLines calibration_lines(TrainedRun& run, const AbcCalibration& c, std::size_t layer) {
  const Task& task = *run.spec.task;
  const std::size_t n = run.spec.config.train_len;
  // The ids evaluation feeds the model ([eval] positions, experiments/eval/evaluate.cpp): the lines are id
  // differences, so biases read off other ids would be applied to ids they were not measured on.
  const PositionConfig positions = eval_positions(run.spec.config);
  AbcLines lines;
  constexpr std::size_t kChunk = 32;  // examples per forward: the maps are (chunk, H, T, T) per layer
  for (std::size_t done = 0; done < c.samples; done += kChunk) {
    throw_if_stopped("calibrating attention biases from " + run.dir);
    const std::size_t b = std::min(kChunk, c.samples - done);
    Batch batch = task.eval_batch(c.seed + done, b, n);  // held-out examples of the largest training size
    Rng position_rng(c.seed + done, 4);  // as evaluate_length's: fixed by the seed and the chunk
    assign_positions(batch, positions, position_rng);
    std::vector<Array> maps;
    ForwardOptions fo;
    fo.attention_maps = &maps;
    if (batch.has_digit_index()) fo.digit_index = &batch.digit_index;
    NoGrad ng;
    run.model->forward(batch.tokens, batch.positions, fo);
    accumulate_abc_lines(lines, maps.at(layer), batch.positions, batch.mask, run.spec.model.causal);
  }
  return lines;
}

AbcCalibrated calibrate_run(const std::string& run_dir, const AbcCalibration& c) {
  TrainedRun run = load_trained_run(run_dir);
  const std::size_t L = run.spec.model.n_layers, n = run.spec.config.train_len;
  if (c.layer > L)
    throw Error("--layer " + std::to_string(c.layer) + ": the model of " + run_dir + " has " + std::to_string(L) +
                " layers; expected 1.." + std::to_string(L) + " (0: the last)");
  const std::size_t layer = (c.layer == 0 ? L : c.layer) - 1;
  const AbcLines lines = calibration_lines(run, c, layer);
  if (lines.count.empty())
    throw Error(run_dir + ": no held-out example of size " + std::to_string(n) + " has a counted target to calibrate on");
  AbcCalibrated out;
  out.bias = calibrate_abc(lines, c.lambda, c.masked);
  out.notes = {"attention bias calibration (Duan et al. 2023, arXiv 2310.11984), written by `pelab abc`",
               "from run " + run_dir + " (encoding " + run.spec.config.encoding + ", task " + run.spec.config.task +
                   ", train_len " + std::to_string(n) + "), checkpoint " + run.checkpoint,
               "layer " + std::to_string(layer + 1) + " of " + std::to_string(L) + ", " + std::to_string(c.samples) +
                   " held-out examples of size " + std::to_string(n) + " (seed " + std::to_string(c.seed) +
                   "), rows whose targets count, position ids as evaluation assigns them ([eval] positions = " +
                   position_mode_name(eval_positions(run.spec.config).mode) + ")",
               "kept: lines (id differences) whose mean probability exceeds mean + " + num(c.lambda) +
                   " std of the head's lines, as d_l - d_max; masked: " + num(c.masked)};
  return out;
}

}  // namespace pelab
