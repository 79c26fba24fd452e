// `pelab sweep --dry-run`: every cell with its estimated CPU time and memory, and the totals, before
// anything is trained or written (estimate.hpp: FLOPs times a rate measured on each distinct model).
#include <cstdio>
#include <map>

#include "core/parallel.hpp"
#include "experiments/run/estimate.hpp"
#include "experiments/run/run.hpp"
#include "experiments/run/sweep.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/transformer.hpp"
#include "training/signals.hpp"

namespace pelab {
namespace {

// The FLOPs of a cell: each step a forward and a backward (about twice the forward) over batch_size rows of
// the longest training sequence; an evaluation at train_len every eval_every steps; the final evaluation at
// every eval length. An upper bound when the run may stop early.
double cell_flops(const RunSpec& c) {
  const ExperimentConfig& cfg = c.config;
  const ModelConfig& m = c.model;
  const Task& task = *c.task;
  double f = double(cfg.train.steps) * 3 * forward_flops(m, cfg.train.batch_size, m.train_seq_len);
  if (cfg.train.eval_every)
    f += double(cfg.train.steps / cfg.train.eval_every) *
         forward_flops(m, cfg.eval.samples, task.sequence_length(cfg.train_len));
  for (std::size_t n : cfg.eval.lengths) f += forward_flops(m, cfg.eval.samples, task.sequence_length(n));
  return f;
}

// FLOP/s of each distinct model (the settings of to_toml's [model], [encoding] and [attention] and the
// training length), measured once on one thread.
double cell_rate(const RunSpec& c, std::map<std::string, double>& rates) {
  ExperimentConfig key_cfg = c.config;
  key_cfg.train = {};
  key_cfg.eval = {};
  key_cfg.cell = {};
  const std::string key = to_toml(key_cfg) + std::to_string(c.model.train_seq_len);
  if (auto it = rates.find(key); it != rates.end()) return it->second;
  throw_if_stopped("measuring the models' speed; nothing was written");
  Transformer model(c.model);
  return rates[key] = measure_forward_rate(model, c.model.train_seq_len);
}

}  // namespace

int print_sweep_estimate(const LoadedConfig& loaded, const SweepOptions& opt) {
  const std::vector<RunSpec>& cells = loaded.runs;
  set_phase("estimating the cells");
  parallel::set_threads(1);  // CPU time: the rate of one thread
  std::map<std::string, double> rates;
  std::printf("dry run: %zu cell(s); nothing is trained or written. CPU time at most (runs that stop early take "
              "less); memory of one training step:\n", cells.size());
  double total = 0;
  std::size_t peak = 0;
  for (const RunSpec& c : cells) {
    const double secs = cell_flops(c) / cell_rate(c, rates);
    const std::size_t bytes = ResourceModel(c).training().total();
    total += secs;
    peak = std::max(peak, bytes);
    std::printf("  %-50s %10s  %10s\n", c.config.cell.label.empty() ? "(the one run)" : c.config.cell.label.c_str(),
                format_duration(secs).c_str(), format_bytes(double(bytes)).c_str());
  }
  const int jobs = std::max(1, opt.jobs);
  std::printf("total: %s of CPU time (about %s with --jobs %d); at most %s per cell, %s for %d at a time\n",
              format_duration(total).c_str(), format_duration(total / double(std::min<std::size_t>(jobs, cells.size()))).c_str(),
              jobs, format_bytes(double(peak)).c_str(), format_bytes(double(peak) * jobs).c_str(), jobs);
  return kOk;
}

}  // namespace pelab
