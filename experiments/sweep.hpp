// Sweeps: every cell of the [sweep] grid runs as its own `pelab train` process, up to `jobs` at a time,
// each with `threads` step threads (train.threads; by default cores / jobs, so that cells x threads =
// the cores this process may use; results do not depend on the thread count: README "Threads"). Finished cells (eval.json present) are skipped, so re-running a
// sweep resumes it; unfinished cells resume from their last checkpoint. Each cell's directory is
// locked by the process training it.
#pragma once

#include <string>
#include <vector>

#include "experiments/config.hpp"

namespace pelab {

struct SweepOptions {
  std::string out_dir;          // the sweep directory (default: output.dir of the config)
  int jobs = 1;
  int threads = 0;              // step threads per cell (train.threads); 0: max(1, cores / jobs)
  bool report = true;           // run `pelab report` at the end
  std::string self_exe;         // the pelab binary to spawn for each cell
};

// Writes SWEEP/sweep.toml (the grid) and SWEEP/<cell>/cell.toml (each cell's config with its [cell]
// table), then runs `pelab train <cell>/cell.toml` per unfinished cell. Returns an exit code (0 when
// every cell finished).
int run_sweep(const LoadedConfig& loaded, const SweepOptions& opt);

}  // namespace pelab
