// The process group pelab runs in: one process, or the ranks of an MPI job (mpirun / srun).
// A tiny interface so that only training/distributed_mpi.cpp includes mpi.h; a build without MPI
// compiles training/distributed_none.cpp instead (one rank, and the messaging calls throw).
//
// MPI is initialised only when a launcher started the process (mpirun, srun: see launched()), so a
// plain `pelab train` in an MPI build neither needs nor touches an MPI runtime, and the cell
// processes a single-machine sweep spawns stay plain processes.
#pragma once

#include <cstddef>
#include <string>

namespace pelab::dist {

bool built_with_mpi();
std::string summary();  // "Open MPI v4.1.4, ..." or "not built in ..." (pelab --version / list)
bool launched();        // the environment says an MPI launcher started this process

// Initialises MPI when launched() (threads: MPI_THREAD_SERIALIZED requested) and finalises it at
// destruction. One per process, in main().
class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

bool active();      // MPI is initialised (a Session under a launcher)
int rank();         // 0 without MPI
int size();         // 1 without MPI
bool threads_ok();  // MPI calls may come from a thread other than main (one at a time)

// Collectives over all ranks. Without MPI (one rank) they leave the data as it is.
void allreduce_sum(float* data, std::size_t n);  // in place
bool any(bool local);                            // logical or over the ranks
void barrier();
// A barrier that waits by polling with short sleeps instead of spinning a core (Open MPI's blocking
// calls busy-wait): for ranks that may wait minutes while others still compute.
void idle_barrier();

// Point-to-point messages of a few integers (the sweep's work queue).
void send_ints(int to, int tag, const long* data, int n);
// Waits (polling with short sleeps) for a message with `tag` from `from` (-1: any rank); fills
// data[0..n) and returns the sender.
int recv_ints(int from, int tag, long* data, int n);
// Non-blocking: whether a message with `tag` from any rank is waiting.
bool probe(int tag);

// Ends the whole job with `code` (MPI_Abort when active, else returns code): a rank that fails
// alone must not leave the others waiting in a collective.
int abort_job(int code);

}  // namespace pelab::dist
