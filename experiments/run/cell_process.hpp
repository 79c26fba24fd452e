// Child processes of a sweep, one per cell, that never outlive it. Each cell runs in its own process
// group, so a Ctrl-C at the terminal reaches only the sweep, which forwards it once to every cell (a
// cell that got the terminal's signal and the forwarded one would take the second as "stop now" and
// die without its checkpoint). If the sweep dies, even by SIGKILL, the kernel sends each cell SIGTERM
// (prctl PR_SET_PDEATHSIG), and the cell stops as on Ctrl-C: checkpoint, exit 130, lock released, so
// re-running the sweep resumes it. posix_spawn cannot run prctl in the child, hence fork + exec.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace pelab {

// Starts argv[0] (a path) with argv, stdout and stderr appended to `log`, stdin from /dev/null, in a
// new process group of its own, with SIGTERM on the parent's death. Throws Error naming what failed.
pid_t spawn_cell(const std::vector<std::string>& argv, const std::string& log);

// Sends `sig` to the process group of every cell in `pids` (each cell leads its own group).
void signal_cells(const std::vector<pid_t>& pids, int sig);

}  // namespace pelab
