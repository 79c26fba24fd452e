// Sweeps: every cell of the [sweep] grid runs as its own `pelab train` process (one BLAS thread each
// by default), up to `jobs` at a time, in its own process group (experiments/cell_process.hpp): Ctrl-C
// or SIGTERM to the sweep is forwarded to the cells, which checkpoint and exit; if the sweep dies, they
// stop too. Finished cells (eval.json present) are skipped, so re-running a
// sweep resumes it; unfinished cells resume from their last checkpoint. Each cell's directory is
// locked by the process training it.
#pragma once

#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/resources.hpp"

namespace pelab {

struct SweepOptions {
  std::string out_dir;          // the sweep directory (default: output.dir of the config)
  int jobs = 1;
  bool report = true;           // run `pelab report` at the end
  std::string self_exe;         // the pelab binary to spawn for each cell
  std::string dir_source = "--out";  // the flag or key that chose the sweep directory, for messages
  MemoryLimit memory;           // every cell is checked against it before anything is written
  std::string memory_flag;      // --memory-limit as given (passed on to each cell), or ""
};

// Writes SWEEP/sweep.toml (the grid) and SWEEP/<cell>/cell.toml (each cell's config with its [cell]
// table), then runs `pelab train <cell>/cell.toml` per unfinished cell. Returns an exit code (0 when
// every cell finished).
int run_sweep(const LoadedConfig& loaded, const SweepOptions& opt);

}  // namespace pelab
