// `mpirun -np N pelab sweep CONFIG`: the cells of a [sweep] grid spread over the ranks of an MPI job.
//
// Rank 0 writes the sweep directory (sweep.toml, every cell.toml) as `pelab sweep` does, then hands
// out the unfinished cells one at a time as ranks become free (a work queue of MPI messages; rank 0
// trains cells too, its queue served by a second thread that alone makes MPI calls there). Every rank
// trains its cells in-process, exactly as `pelab train CELL/cell.toml --out CELL --resume-or-start`
// would (same lock, resume and eval.json rules), not as child processes: forking under mpirun is
// fragile (the children inherit the launcher's environment, and fork with an initialised MPI is
// unsafe with some interconnects). Rank 0 writes the report at the end.
//
// The sweep directory must be on a filesystem every rank sees (NFS, Lustre, ...). A rank that dies
// ends the job (mpirun's default); re-running the same command skips finished cells and resumes the
// interrupted ones from their checkpoints.
#pragma once

#include "experiments/config/config.hpp"
#include "experiments/run/sweep.hpp"

namespace pelab {

// Every rank calls it (each has loaded the same config). Returns rank 0's exit code on rank 0 (0 when
// every cell finished), kOk on the other ranks.
int run_sweep_mpi(const LoadedConfig& loaded, const SweepOptions& opt);

}  // namespace pelab
