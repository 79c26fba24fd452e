#include "experiments/run/mpi_sweep.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "core/tape.hpp"
#include "experiments/report/report.hpp"
#include "experiments/run/run.hpp"
#include "experiments/run/sweep.hpp"
#include "training/distributed.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"

namespace fs = std::filesystem;

namespace pelab {

namespace {

constexpr int kTagRequest = 101;  // worker -> 0: {cell it finished or -1, its exit code, milliseconds}
constexpr int kTagAssign = 102;   // 0 -> worker: {cell to run, or -1: no more work}

using Clock = std::chrono::steady_clock;

// One cell, in this process, as `pelab train CELL/cell.toml --out CELL --resume-or-start` runs it.
int run_cell(const std::string& dir) {
  try {
    const LoadedConfig cell = load_config(dir + "/cell.toml", {});
    RunOptions ro;
    ro.run_dir = dir;
    ro.resume = true;  // a cell with checkpoints resumes; one without starts at step 0
    ro.console = false;  // train.log and metrics.jsonl in the cell directory say everything
    return run_experiment(cell.runs.at(0), ro);
  } catch (const std::exception& e) {
    Tape::current().clear();  // an error mid-step may leave recorded ops behind; the next cell starts clean
    const bool bad_input = dynamic_cast<const Error*>(&e) != nullptr;
    std::ofstream(dir + "/stdout.log", std::ios::app) << "error: " << e.what() << "\n";
    std::fprintf(stderr, "rank %d: %s: error: %s\n", dist::rank(), dir.c_str(), e.what());
    return bad_input ? kBadInput : kError;
  }
}

// Rank 0's bookkeeping, shared by its training thread and its dispatcher thread.
struct Board {
  std::mutex m;
  const std::vector<RunSpec>& cells;
  std::string root;
  std::vector<std::size_t> todo;
  std::size_t next = 0, finished = 0, succeeded = 0;  // ended, and ended with a result (skipped ones included)
  bool stopping = false, interrupted = false;
  std::vector<std::string> failed;

  Board(const std::vector<RunSpec>& c, std::string r) : cells(c), root(std::move(r)) {}

  std::optional<std::size_t> take() {
    std::lock_guard<std::mutex> g(m);
    stopping = stopping || stop_requested();
    if (stopping || next >= todo.size()) return std::nullopt;
    return todo[next++];
  }
  void done(std::size_t idx, int code, double secs, int rank) {
    std::lock_guard<std::mutex> g(m);
    const RunSpec& c = cells.at(idx);
    const std::string dir = root + "/" + c.dir_name, &label = c.config.cell.label;
    ++finished;
    if (code == kOk && fs::exists(dir + "/eval.json")) {
      ++succeeded;
      std::printf("[%zu/%zu] done   %-45s %6.0fs  rank %d  %s\n", finished, cells.size(), label.c_str(), secs, rank,
                  sweep_cell_summary(dir).c_str());
    } else {
      if (code == kInterrupted || stop_requested()) interrupted = stopping = true;
      failed.push_back(failed_cell_text(label, dir + "/train.log"));
      std::printf("[%zu/%zu] %s %-45s exit %d on rank %d, see %s/train.log\n", finished, cells.size(),
                  interrupted ? "stopped" : "FAILED", label.c_str(), code, rank, dir.c_str());
    }
    std::fflush(stdout);
  }
};

// Rank 0's dispatcher: answers every other rank's request until each has been told to stop. It alone
// makes MPI calls on rank 0 while the sweep runs.
void serve(Board& b) {
  int remote = dist::size() - 1;
  while (remote > 0) {
    if (!dist::probe(kTagRequest)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls: no core spent waiting
      continue;
    }
    long msg[3];
    const int from = dist::recv_ints(-1, kTagRequest, msg, 3);
    if (msg[0] >= 0) b.done(static_cast<std::size_t>(msg[0]), static_cast<int>(msg[1]), double(msg[2]) / 1e3, from);
    const auto idx = b.take();
    const long assign = idx ? static_cast<long>(*idx) : -1;
    dist::send_ints(from, kTagAssign, &assign, 1);
    if (assign < 0) --remote;
  }
}

int worker(const std::vector<RunSpec>& cells, const std::string& root) {
  long msg[3] = {-1, 0, 0};
  for (;;) {
    dist::send_ints(0, kTagRequest, msg, 3);
    long idx = -1;
    dist::recv_ints(0, kTagAssign, &idx, 1);
    if (idx < 0) return kOk;
    const auto t0 = Clock::now();
    const int code = stop_requested() ? kInterrupted : run_cell(root + "/" + cells.at(std::size_t(idx)).dir_name);
    msg[0] = idx;
    msg[1] = code;
    msg[2] = static_cast<long>(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
}

}  // namespace

int run_sweep_mpi(const LoadedConfig& loaded, const SweepOptions& opt) {
  const std::vector<RunSpec>& cells = loaded.runs;
  const std::string root = opt.out_dir.empty() ? loaded.config.output_dir : opt.out_dir;
  install_stop_handlers();
  for (const RunSpec& c : cells) check_gemm_env(c.config);  // on every rank, before rank 0 writes anything
  if (dist::rank() != 0) {
    dist::barrier();  // rank 0 has written every cell.toml
    return worker(cells, root);
  }

  Board board(cells, root);
  std::size_t skipped = 0;
  {
    check_sweep_directory(cells, root, opt.dir_source);
    fs::create_directories(root);
    write_file_atomic(root + "/sweep.toml", to_toml(loaded.config));
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string dir = root + "/" + cells[i].dir_name;
      if (fs::exists(dir + "/eval.json")) {
        ++skipped;
        continue;
      }
      fs::create_directories(dir);
      write_file_atomic(dir + "/cell.toml", to_toml(cells[i].config));
      board.todo.push_back(i);
    }
  }
  board.finished = board.succeeded = skipped;
  const bool rank0_trains = dist::threads_ok();
  std::printf("sweep %s: %zu cells (%zu already finished), %zu to run on %d MPI ranks (one cell per rank at a "
              "time%s)\n", root.c_str(), cells.size(), skipped, board.todo.size(), dist::size(),
              rank0_trains ? "" : "; rank 0 only hands out cells: this MPI has no MPI_THREAD_SERIALIZED");
  if (opt.jobs > 1) std::printf("note: --jobs %d is ignored under mpirun: start more ranks instead\n", opt.jobs);
  std::fflush(stdout);
  dist::barrier();

  const auto t0 = Clock::now();
  if (rank0_trains) {
    std::thread dispatcher(serve, std::ref(board));
    while (const auto idx = board.take()) {
      const auto c0 = Clock::now();
      const int code = run_cell(root + "/" + cells[*idx].dir_name);
      board.done(*idx, code, std::chrono::duration<double>(Clock::now() - c0).count(), 0);
    }
    dispatcher.join();
  } else {
    serve(board);
  }
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("%s\n", sweep_tally(total, board.succeeded, cells.size(), board.failed.size(), board.interrupted).c_str());

  return finish_sweep(loaded, root, opt, board.interrupted, board.failed);
}

}  // namespace pelab
