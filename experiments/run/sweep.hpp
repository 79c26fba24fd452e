// Sweeps: every cell of the [sweep] grid runs as its own `pelab train` process, up to `jobs` at a time,
// each with `threads` step threads (train.threads; by default cores / jobs, so that cells x threads =
// the cores this process may use; results do not depend on the thread count: docs/performance.md, "Threads"), in its
// own process group (experiments/run/cell_process.hpp): Ctrl-C or SIGTERM to the sweep is forwarded to the
// cells, which checkpoint and exit; if the sweep dies, they stop too. Finished cells (eval.json
// present) are skipped, so re-running a sweep resumes it (a cell whose recorded settings differ from the
// grid's is refused: check_sweep_directory); unfinished cells resume from their last checkpoint. Each cell's directory is
// locked by the process training it.
#pragma once

#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/run/resources.hpp"

namespace pelab {

struct SweepOptions {
  std::string out_dir;          // the sweep directory (default: output.dir of the config)
  int jobs = 1;
  int threads = 0;              // step threads per cell (train.threads); 0: max(1, cores / jobs)
  bool report = true;           // run `pelab report` at the end
  bool probe = false;           // run `pelab probe run` on every finished cell before the report
  std::string self_exe;         // the pelab binary to spawn for each cell
  std::string dir_source = "--out";  // the flag or key that chose the sweep directory, for messages
  MemoryLimit memory;           // every cell is checked against it before anything is written
  std::string memory_flag;      // --memory-limit as given (passed on to each cell), or ""
};

// Writes SWEEP/sweep.toml (the grid) and SWEEP/<cell>/cell.toml (each cell's config with its [cell]
// table), then runs `pelab train <cell>/cell.toml` per unfinished cell. Returns an exit code (0 when
// every cell finished).
// Under an MPI launcher it runs the cells across the ranks instead (experiments/run/mpi_sweep.hpp).
int run_sweep(const LoadedConfig& loaded, const SweepOptions& opt);

// `pelab sweep --dry-run`: each cell's estimated CPU time (estimate.hpp) and training memory
// (resources.hpp), and the totals; trains and writes nothing (sweep_estimate.cpp). Returns kOk.
int print_sweep_estimate(const LoadedConfig& loaded, const SweepOptions& opt);

// One line summarising a finished cell directory (its headline metric), "" when it has no result.
std::string sweep_cell_summary(const std::string& dir);

// Before anything is written into a sweep directory: it must not hold a single run (config.toml without
// sweep.toml), and every cell with results (eval.json, or checkpoints) must have been trained with the
// settings the grid gives it now (changed_settings, experiments/run/run.hpp: keys that do not change results
// aside). Throws Error naming the cells and their differing keys; it re-runs nothing.
void check_sweep_directory(const std::vector<RunSpec>& cells, const std::string& root, const std::string& dir_source);

// The last line of a sweep: "sweep finished after 12s: 85 of 200 cells done, 2 failed, 113 not started".
std::string sweep_tally(double seconds, std::size_t done, std::size_t cells, std::size_t failed, bool interrupted);

// A failed cell for the sweep's last lines: "LABEL: the first error line of LOG", or "LABEL: see LOG"
// when the log has none.
std::string failed_cell_text(const std::string& label, const std::string& log);

// The end of a sweep, local or across ranks: the selection of [protocol] select (selection.hpp: selection.csv),
// probes (opt.probe or [probe] run), the report, and the
// exit code: interrupted, some cells failed (listed, one failed_cell_text a line), or 0.
int finish_sweep(const LoadedConfig& loaded, const std::string& root, const SweepOptions& opt, bool interrupted,
                 const std::vector<std::string>& failed);

}  // namespace pelab
