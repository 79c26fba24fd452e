// One experiment run: config -> task + model -> training -> evaluation -> run directory.
//
// Run directory: config.toml (to_toml of the run's config), train.log, metrics.jsonl, checkpoints/, and
// at the end eval.json (experiments/eval_result.hpp; its presence marks the run finished, and a sweep
// skips finished cells).
#pragma once

#include <string>

#include "experiments/config.hpp"

namespace pelab {

struct RunOptions {
  std::string run_dir;
  bool resume = true;     // continue from the latest checkpoint when there is one
  bool require_checkpoint = false;  // with resume: no usable checkpoint is an error (pelab train --resume)
  bool console = true;
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
int run_experiment(const RunSpec& spec, const RunOptions& opt);

// The run's settings as a two-column table, for the top of its console output.
std::string config_table(const RunSpec& spec, std::size_t n_params);

}  // namespace pelab
