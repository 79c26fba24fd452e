// One experiment run: config -> task + model -> training -> evaluation -> run directory.
//
// Run directory: config.toml (resolved), train.log, metrics.jsonl, checkpoints/, and at the end
// eval.json (its presence marks the run finished; a sweep skips finished cells).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/tasks/task.hpp"

namespace pelab {

struct RunOptions {
  std::string run_dir;
  bool resume = true;     // continue from the latest checkpoint when there is one
  bool require_checkpoint = false;  // with resume: no usable checkpoint is an error (pelab train --resume)
  bool console = true;
  std::string label;      // the sweep cell's label, stored in eval.json
  std::vector<std::pair<std::string, Value>> assignment;  // the sweep cell's swept keys
  std::string resume_command;
};

// Exclusive lock on a run directory for the life of the object: two processes never write one run.
class RunLock {
 public:
  explicit RunLock(const std::string& run_dir);  // throws Error if another process holds it
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// Exit codes shared by the CLI.
enum ExitCode { kOk = 0, kError = 1, kBadInput = 2, kDiverged = 3, kInterrupted = 130 };

// Trains and evaluates; returns an ExitCode. Throws Error on bad input.
int run_experiment(const ExperimentConfig& cfg, const RunOptions& opt);

// Builds the model configuration for a config and its task (vocab and train_len come from the task).
ModelConfig model_config_for(const ExperimentConfig& cfg, const Task& task);
std::unique_ptr<Task> task_for(const ExperimentConfig& cfg);

// The resolved config as a two-column table, for the top of a run's console output.
std::string config_table(const ExperimentConfig& cfg, std::size_t n_params);

}  // namespace pelab
