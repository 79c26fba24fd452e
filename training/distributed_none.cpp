// training/distributed.hpp without MPI (CMake found none, or -DPELAB_MPI=OFF): always one rank.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "training/distributed.hpp"

namespace pelab::dist {

namespace {
[[noreturn]] void no_mpi(const char* what) {
  throw std::logic_error(std::string(what) + ": this pelab was built without MPI");
}
}  // namespace

bool built_with_mpi() { return false; }
std::string summary() {
  return "not built in (CMake found no MPI, or -DPELAB_MPI=OFF: install openmpi-bin and libopenmpi-dev, see "
         "scripts/setup.sh, and reconfigure)";
}
bool launched() { return false; }
// Started as one of several ranks (mpirun -np 2 of this build): every rank would run the whole job
// alone, so refuse with exit code 2.
Session::Session(int*, char***) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* n = std::getenv(v);
    if (n && std::atoi(n) > 1) {
      std::fprintf(stderr, "error: started by an MPI launcher (%s=%s) but this pelab was built without MPI; "
                           "install libopenmpi-dev and rebuild (scripts/setup.sh), or run it without mpirun\n", v, n);
      std::exit(2);
    }
  }
}
Session::~Session() = default;
bool active() { return false; }
int rank() { return 0; }
int size() { return 1; }
bool threads_ok() { return false; }
void allreduce_sum(float*, std::size_t) {}
bool any(bool local) { return local; }
void barrier() {}
void idle_barrier() {}
void send_ints(int, int, const long*, int) { no_mpi("send_ints"); }
int recv_ints(int, int, long*, int) { no_mpi("recv_ints"); }
bool probe(int) { no_mpi("probe"); }
int abort_job(int code) { return code; }

}  // namespace pelab::dist
