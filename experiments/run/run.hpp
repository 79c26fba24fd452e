// One experiment run: config -> task + model -> training -> evaluation -> run directory.
//
// Run directory: config.toml (to_toml of the run's config), train.log, metrics.jsonl, checkpoints/, and
// at the end eval.json (experiments/eval/eval_result.hpp; its presence marks the run finished, and a sweep
// skips finished cells).
#pragma once

#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/run/resources.hpp"

namespace pelab {

struct RunOptions {
  std::string run_dir;
  bool resume = true;     // continue from the latest checkpoint when there is one
  bool require_checkpoint = false;  // with resume: no usable checkpoint is an error (pelab train --resume)
  bool console = true;
  std::string resume_command;
  bool data_parallel = false;  // under mpirun with several ranks: one run trained across them all
                               // (training/data_parallel.hpp); rank 0 alone writes run_dir
  std::string dir_source = "--out";  // the flag or key that chose run_dir, for messages ("output.dir at x.toml:9")
  MemoryLimit memory;                // checked before anything is written (bytes 0: no check)
};

// Exclusive lock on a run directory for the life of the object: two processes never write one run.
// The holder writes its pid into the lock file (for messages and tests). A lock still held waits up
// to `wait_s` seconds first: a sweep cell stopped by its parent's death may still be writing its
// checkpoint when the sweep is re-run.
class RunLock {
 public:
  explicit RunLock(const std::string& run_dir, double wait_s = 2);  // throws Error if another process holds it
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// Exit codes shared by the CLI.
enum ExitCode { kOk = 0, kError = 1, kBadInput = 2, kDiverged = 3, kInterrupted = 130 };

// Checks memory (opt.memory), trains and evaluates; returns an ExitCode (kInterrupted when a stop was
// requested during training or evaluation: the checkpoint stays and a re-run with --resume finishes).
// Throws Error on bad input, a filesystem error naming opt.dir_source.
int run_experiment(const RunSpec& spec, const RunOptions& opt);

// The settings a run or cell directory recorded (its config.toml, else its cell.toml) that differ from
// `wanted_toml` (to_toml of the config about to run) in a key that changes results, as setting_differences
// words them; a recorded file this version cannot read is one difference saying why. `pelab train` and
// `pelab sweep` refuse a directory whose results come from other settings.
std::vector<std::string> changed_settings(const std::string& dir, const std::string& wanted_toml);
// When one of changed_settings' differences is train.gemm (the GEMM path, which a config that does not
// name it takes from the build and PELAB_GEMM): " To go on with the path it was trained with, add --set
// train.gemm=X (or name it in the config)." ("" otherwise).
std::string gemm_difference_hint(const std::vector<std::string>& differences);

// The eval lengths above train_len that every held-out evaluation during training also measures
// ([eval] beyond_samples): all of them up to kMaxBeyondLengths, else that many spread evenly by index
// over them, the first and the last included (a range of hundreds of lengths would cost more than
// training: 1..500 takes 11.6 CPU minutes at 64 examples per length). Empty when beyond_samples is 0.
constexpr std::size_t kMaxBeyondLengths = 8;
std::vector<std::size_t> beyond_lengths(const ExperimentConfig& cfg);

// The run's settings as a two-column table, for the top of its console output.
std::string config_table(const RunSpec& spec, std::size_t n_params);

}  // namespace pelab
