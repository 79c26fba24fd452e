// The MPI implementation of training/distributed.hpp (compiled when CMake found MPI): the only file
// that includes mpi.h.
#include <mpi.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "training/distributed.hpp"

namespace pelab::dist {

namespace {

bool g_active = false;
int g_rank = 0, g_size = 1, g_thread_level = MPI_THREAD_SINGLE;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw std::runtime_error(std::string(what) + ": " + std::string(msg, static_cast<std::size_t>(len)));
}

// Polls a request with short sleeps: Open MPI's MPI_Wait spins a core, which a rank that waits
// for minutes (the sweep) must not take from the ranks still computing.
void wait_politely(MPI_Request& req, MPI_Status* st) {
  int done = 0;
  for (;;) {
    check(MPI_Test(&req, &done, st ? st : MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

bool built_with_mpi() { return true; }

std::string summary() {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string s(lib, static_cast<std::size_t>(len));
  if (auto nl = s.find_first_of("\r\n"); nl != std::string::npos) s.resize(nl);
  if (auto comma = s.find(','); comma != std::string::npos) s.resize(comma);  // "Open MPI v4.1.4"
  return "built in (" + s + "); this process: " +
         (g_active ? "rank " + std::to_string(g_rank) + " of " + std::to_string(g_size)
                   : std::string("not under an MPI launcher"));
}

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

Session::Session(int* argc, char*** argv) {
  if (!launched()) return;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &g_thread_level), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_active = true;
}

Session::~Session() {
  if (!g_active) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // A rank done early (a sweep worker, a data-parallel rank while rank 0 evaluates) waits here without
  // spinning a core; MPI_Finalize itself may busy-wait for the others.
  try {
    idle_barrier();
  } catch (const std::exception&) {
  }
  MPI_Finalize();
  g_active = false;
}

bool active() { return g_active; }
int rank() { return g_rank; }
int size() { return g_size; }
bool threads_ok() { return g_active && g_thread_level >= MPI_THREAD_SERIALIZED; }

void allreduce_sum(float* data, std::size_t n) {
  if (!g_active || g_size == 1) return;
  // MPI counts are int: large buffers go in chunks.
  constexpr std::size_t kChunk = std::size_t(1) << 30;
  for (std::size_t off = 0; off < n; off += kChunk) {
    const int cnt = static_cast<int>(std::min(kChunk, n - off));
    check(MPI_Allreduce(MPI_IN_PLACE, data + off, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
}

bool any(bool local) {
  if (!g_active || g_size == 1) return local;
  int v = local ? 1 : 0;
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce");
  return v != 0;
}

void barrier() {
  if (g_active && g_size > 1) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void idle_barrier() {
  if (!g_active || g_size == 1) return;
  MPI_Request req;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
  wait_politely(req, nullptr);
}

void send_ints(int to, int tag, const long* data, int n) {
  check(MPI_Send(data, n, MPI_LONG, to, tag, MPI_COMM_WORLD), "MPI_Send");
}

int recv_ints(int from, int tag, long* data, int n) {
  MPI_Request req;
  MPI_Status st;
  check(MPI_Irecv(data, n, MPI_LONG, from < 0 ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD, &req), "MPI_Irecv");
  wait_politely(req, &st);
  return st.MPI_SOURCE;
}

bool probe(int tag) {
  int flag = 0;
  check(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
  return flag != 0;
}

int abort_job(int code) {
  if (!g_active || g_size == 1) return code;
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // not reached
}

}  // namespace pelab::dist
