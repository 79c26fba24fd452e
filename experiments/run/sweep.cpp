#include "experiments/run/sweep.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "experiments/run/cell_process.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/run/mpi_sweep.hpp"
#include "experiments/probe/probe.hpp"
#include "experiments/report/report.hpp"
#include "experiments/run/run.hpp"
#include "experiments/run/selection.hpp"
#include "training/checkpoint.hpp"
#include "training/distributed.hpp"
#include "core/parallel.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"
#include "training/signals.hpp"

namespace fs = std::filesystem;

namespace pelab {

namespace {

struct Running {
  std::size_t index;
  std::chrono::steady_clock::time_point start;
};

// One line summarising a finished cell: its headline metric in distribution (at train_len) and at the
// longest length, and the step it stopped at when it stopped before its cap (budget first_fit or competent).
std::string cell_summary(const std::string& dir) {
  try {
    const EvalResult r = read_eval_result(dir + "/eval.json");
    const MetricSpec& m = headline_metric(r.is_lm, !r.is_lm);
    std::string in, out;
    for (const auto& lr : r.results) {
      std::string v = "n/a";
      if (auto x = lr.metric(m.name)) {
        char buf[48];
        std::snprintf(buf, sizeof buf, m.percent ? "%s %.1f%%" : "%s %.3f", m.name.c_str(), m.percent ? 100 * *x : *x);
        v = buf;
      }
      const std::string s = "@" + std::to_string(lr.length) + " " + v;
      if (lr.in_distribution && lr.length == r.train_len) in = s;
      out = s;
    }
    const std::string stopped = r.status == "early_stopped" ? ", stopped at step " + std::to_string(r.steps) : "";
    return in + (in.empty() ? "" : ", ") + out + stopped;
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

std::string sweep_cell_summary(const std::string& dir) { return cell_summary(dir); }

void check_sweep_directory(const std::vector<RunSpec>& cells, const std::string& root, const std::string& dir_source) {
  if (fs::exists(root + "/config.toml") && !fs::exists(root + "/sweep.toml"))
    throw Error(root + " (" + dir_source + ") holds a single run (config.toml, no sweep.toml): a sweep's cells "
                "would sit beside its files; choose another output directory for the sweep");
  std::string changed, hint;
  std::size_t n_changed = 0;
  for (const RunSpec& c : cells) {
    const std::string dir = root + "/" + c.dir_name;
    if (!fs::exists(dir + "/eval.json") && !(fs::exists(dir + "/config.toml") && latest_checkpoint(dir))) continue;
    const std::vector<std::string> diff = changed_settings(dir, to_toml(c.config));
    if (diff.empty()) continue;
    if (hint.empty()) hint = gemm_difference_hint(diff);
    if (++n_changed > 5) continue;  // the first five, in grid order
    changed += "\n  " + c.dir_name + ":";
    for (const auto& d : diff) changed += "\n    " + d;
  }
  if (n_changed)
    throw Error("sweep directory " + root + " (" + dir_source + ") holds " + std::to_string(n_changed) +
                " cell(s) trained with other settings than this grid's; their results would be reported as this "
                "grid's. Choose another output directory, or remove those cell directories to re-run them." + hint +
                " The cells:" + changed +
                (n_changed > 5 ? "\n  ... and " + std::to_string(n_changed - 5) + " more" : ""));
}

std::string failed_cell_text(const std::string& label, const std::string& log) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("error: ", 0) == 0) return label + ": " + line;
  return label + ": see " + log;
}

std::string sweep_tally(double seconds, std::size_t done, std::size_t cells, std::size_t failed, bool interrupted) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "sweep %s after %.0fs: %zu of %zu cells done", interrupted ? "stopped" : "finished",
                seconds, done, cells);
  std::string s = buf;
  if (failed) s += ", " + std::to_string(failed) + (interrupted ? " stopped or failed" : " failed");
  if (const std::size_t rest = cells - std::min(cells, done + failed)) s += ", " + std::to_string(rest) + " not started";
  return s;
}

int finish_sweep(const LoadedConfig& loaded, const std::string& root, const SweepOptions& opt, bool interrupted,
                 const std::vector<std::string>& failed) {
  if ((opt.probe || loaded.config.probe.run) && !interrupted) {
    std::vector<std::string> dirs;
    for (const auto& c : loaded.runs) dirs.push_back(c.dir_name);
    probe_sweep_cells(root, dirs, opt.memory);  // prints per cell; a failed probe does not fail the sweep
  }
  if (!interrupted) {
    try {
      write_selection(loaded, root);  // [protocol] select (experiments/run/selection.hpp)
    } catch (const Error& e) {
      std::fprintf(stderr, "selection: %s\n", e.what());
    }
  }
  if (opt.report && !interrupted) {
    restore_default_stop_handlers();  // the report writes whole files only: a signal may end it at once
    set_phase("writing the report");
    try {
      const ReportResult rep = write_report(root);
      std::printf("\n%s\n", rep.table_markdown.c_str());
      for (const auto& f : rep.files_written) std::printf("wrote %s\n", f.c_str());
      for (const auto& w : rep.warnings) std::printf("warning: %s\n", w.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "report: %s\n", e.what());
    }
  }
  std::fflush(stdout);
  if (interrupted) {
    std::printf("interrupted: unfinished cells keep their checkpoints; re-run the same command to resume\n");
    return kInterrupted;
  }
  if (!failed.empty()) {
    std::fprintf(stderr, "%zu cell(s) failed:\n", failed.size());
    for (const auto& f : failed) std::fprintf(stderr, "  %s\n", f.c_str());
    return kError;
  }
  return kOk;
}


namespace {

// Threads per cell: cells x threads = cores unless --threads says otherwise (results do not depend on
// the count).
int threads_per_cell(const SweepOptions& opt, int jobs) {
  if (opt.threads > 0) {
    const std::string why = parallel::check_threads(opt.threads, "--threads");
    if (!why.empty()) throw Error(why);
  }
  return opt.threads > 0 ? opt.threads : std::max(1, parallel::hardware_threads() / jobs);
}

// Before anything is written: every cell's training and evaluation must fit in memory.
void check_cells_memory(const std::vector<RunSpec>& cells, const SweepOptions& opt) {
  for (const RunSpec& c : cells) {
    throw_if_stopped("checking the cells' memory; nothing was written");
    try {
      check_memory(c, opt.memory, true);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (sweep cell " + c.config.cell.label + ")");
    }
  }
}

void write_sweep_toml(const std::string& root, const ExperimentConfig& cfg, const SweepOptions& opt) {
  make_directory(root, "sweep directory", opt.dir_source);
  try {
    write_file_atomic(root + "/sweep.toml", to_toml(cfg));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the sweep directory comes from " + opt.dir_source + ")");
  }
}

// The cells still to run (no eval.json), each given its directory and cell.toml; `skipped` counts the
// finished ones.
std::vector<std::size_t> prepare_cells(const std::vector<RunSpec>& cells, const std::string& root,
                                       const SweepOptions& opt, int threads, std::size_t& skipped) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string dir = root + "/" + cells[i].dir_name;
    if (fs::exists(dir + "/eval.json")) {
      ++skipped;
      continue;
    }
    throw_if_stopped("preparing the cells; every file written is whole, and the sweep resumes");
    make_directory(dir, "cell directory", "under the sweep directory from " + opt.dir_source);
    ExperimentConfig cell = cells[i].config;
    cell.train.threads = threads;
    write_file_atomic(dir + "/cell.toml", to_toml(cell));
    todo.push_back(i);
  }
  return todo;
}

// Runs cells `jobs` at a time, each a `pelab train` child process, printing a line as each ends. A stop
// request is forwarded to the running cells once; then no new cell starts.
struct CellRunner {
  const std::vector<RunSpec>& cells;
  const std::string& root;
  const SweepOptions& opt;
  int jobs;
  std::size_t finished;  // cells ended so far (the skipped ones included), for "[k/n]"
  std::size_t done;      // cells with their result (the skipped ones included)
  std::map<pid_t, Running> running;
  std::vector<std::string> failed;  // labels
  bool interrupted = false, forwarded = false;

  void spawn(std::size_t idx) {
    const RunSpec& c = cells[idx];
    const std::string dir = root + "/" + c.dir_name;
    // The cell file says everything, its [cell] table included: the child reads nothing else.
    std::vector<std::string> args = {opt.self_exe, "train", dir + "/cell.toml", "--out", dir, "--resume-or-start"};
    if (!opt.memory_flag.empty()) args.insert(args.end(), {"--memory-limit", opt.memory_flag});
    const pid_t pid = spawn_cell(args, dir + "/stdout.log");
    running[pid] = {idx, std::chrono::steady_clock::now()};
  }

  void forward_stop() {
    interrupted = forwarded = true;
    std::vector<pid_t> pids;
    for (const auto& [pid, r] : running) pids.push_back(pid);
    signal_cells(pids, stop_signal() ? stop_signal() : SIGTERM);
    std::printf("stopping: %zu running cell(s) write a checkpoint and exit\n", running.size());
    std::fflush(stdout);
  }

  // A child has ended with `status`: one line, done or failed.
  void reap(pid_t pid, int status) {
    auto it = running.find(pid);
    if (it == running.end()) return;
    const RunSpec& c = cells[it->second.index];
    const std::string& label = c.config.cell.label;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::string dir = root + "/" + c.dir_name;
    ++finished;
    if (code == 0 && fs::exists(dir + "/eval.json")) {
      ++done;
      std::printf("[%zu/%zu] done   %-45s %6.0fs  %s\n", finished, cells.size(), label.c_str(), secs,
                  cell_summary(dir).c_str());
    } else {
      if (code == kInterrupted || stop_requested()) interrupted = true;
      failed.push_back(failed_cell_text(label, dir + "/stdout.log"));
      std::printf("[%zu/%zu] %s %-45s exit %d, see %s/stdout.log\n", finished, cells.size(),
                  interrupted ? "stopped" : "FAILED", label.c_str(), code, dir.c_str());
    }
    std::fflush(stdout);
    running.erase(it);
    interrupted = interrupted || stop_requested();
  }

  void run(const std::vector<std::size_t>& todo) {
    std::size_t next = 0;
    while (next < todo.size() || !running.empty()) {
      while (!interrupted && next < todo.size() && static_cast<int>(running.size()) < jobs) spawn(todo[next++]);
      // Poll rather than block: the stop handler restarts waitpid (SA_RESTART), and a stop must be
      // forwarded to the cells at once, exactly once (a second signal would kill them without a checkpoint).
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid == 0 || (pid < 0 && errno == EINTR)) {
        if (stop_requested() && !forwarded) forward_stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (pid < 0) break;
      reap(pid, status);
    }
  }
};

}  // namespace

int run_sweep(const LoadedConfig& loaded, const SweepOptions& opt) {
  if (dist::active()) return run_sweep_mpi(loaded, opt);  // under mpirun: cells across the ranks
  const ExperimentConfig& cfg = loaded.config;
  const std::vector<RunSpec>& cells = loaded.runs;
  const std::string root = opt.out_dir.empty() ? cfg.output_dir : opt.out_dir;
  const int jobs = std::max(1, opt.jobs);
  const int threads = threads_per_cell(opt, jobs);
  install_stop_handlers();  // a stop before the cells start ends at the next poll, between whole files
  for (const RunSpec& c : cells) check_gemm_env(c.config);  // each cell would refuse it, after the files
  check_cells_memory(cells, opt);
  check_sweep_directory(cells, root, opt.dir_source);
  throw_if_stopped("checking the sweep directory; nothing was written");
  write_sweep_toml(root, cfg, opt);
  std::size_t skipped = 0;
  const std::vector<std::size_t> todo = prepare_cells(cells, root, opt, threads, skipped);
  std::printf("sweep %s: %zu cells (%zu already finished), %zu to run, %d at a time, %d thread(s) each\n",
              root.c_str(), cells.size(), skipped, todo.size(), jobs, threads);
  std::fflush(stdout);

  CellRunner runner{cells, root, opt, jobs, skipped, skipped, {}, {}};
  const auto t0 = std::chrono::steady_clock::now();
  runner.run(todo);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s\n", sweep_tally(total, runner.done, cells.size(), runner.failed.size(), runner.interrupted).c_str());

  return finish_sweep(loaded, root, opt, runner.interrupted, runner.failed);
}

}  // namespace pelab
