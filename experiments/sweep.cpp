#include "experiments/sweep.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "experiments/eval_result.hpp"
#include "experiments/report.hpp"
#include "experiments/run.hpp"
#include "core/parallel.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"
#include "training/signals.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace pelab {

namespace {

struct Running {
  std::size_t index;
  std::chrono::steady_clock::time_point start;
};

// One line summarising a finished cell: its headline metric in distribution (at train_len) and at the
// longest length.
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
    return in + (in.empty() ? "" : ", ") + out;
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

int run_sweep(const LoadedConfig& loaded, const SweepOptions& opt) {
  const ExperimentConfig& cfg = loaded.config;
  const std::vector<RunSpec>& cells = loaded.runs;
  const std::string root = opt.out_dir.empty() ? cfg.output_dir : opt.out_dir;
  const int jobs = std::max(1, opt.jobs);
  if (opt.threads > 0) {
    const std::string why = parallel::check_threads(opt.threads, "--threads");
    if (!why.empty()) throw Error(why);
  }
  // cells x threads = cores unless --threads says otherwise (results do not depend on the count).
  const int threads = opt.threads > 0 ? opt.threads : std::max(1, parallel::hardware_threads() / jobs);

  fs::create_directories(root);
  write_file_atomic(root + "/sweep.toml", to_toml(cfg));

  std::vector<std::size_t> todo;
  std::size_t skipped = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string dir = root + "/" + cells[i].dir_name;
    if (fs::exists(dir + "/eval.json")) {
      ++skipped;
      continue;
    }
    fs::create_directories(dir);
    ExperimentConfig cell = cells[i].config;
    cell.train.threads = threads;
    write_file_atomic(dir + "/cell.toml", to_toml(cell));
    todo.push_back(i);
  }
  std::printf("sweep %s: %zu cells (%zu already finished), %zu to run, %d at a time, %d thread(s) each\n",
              root.c_str(), cells.size(), skipped, todo.size(), jobs, threads);
  std::fflush(stdout);

  install_stop_handlers();
  std::map<pid_t, Running> running;
  std::vector<std::string> failed;
  std::size_t next = 0, finished = skipped;
  const auto t0 = std::chrono::steady_clock::now();
  bool interrupted = false;

  auto spawn = [&](std::size_t idx) {
    const RunSpec& c = cells[idx];
    const std::string dir = root + "/" + c.dir_name;
    // The cell file says everything, its [cell] table included: the child reads nothing else.
    std::vector<std::string> args = {opt.self_exe, "train", dir + "/cell.toml", "--out", dir, "--resume-or-start"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = dir + "/stdout.log";
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, opt.self_exe.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw Error("sweep: cannot start " + opt.self_exe + " for cell " + c.config.cell.label);
    running[pid] = {idx, std::chrono::steady_clock::now()};
  };

  while (next < todo.size() || !running.empty()) {
    while (!interrupted && next < todo.size() && static_cast<int>(running.size()) < jobs) spawn(todo[next++]);
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) {
        interrupted = interrupted || stop_requested();
        continue;
      }
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const RunSpec& c = cells[it->second.index];
    const std::string& label = c.config.cell.label;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::string dir = root + "/" + c.dir_name;
    ++finished;
    if (code == 0 && fs::exists(dir + "/eval.json")) {
      std::printf("[%zu/%zu] done   %-45s %6.0fs  %s\n", finished, cells.size(), label.c_str(), secs,
                  cell_summary(dir).c_str());
    } else {
      if (code == kInterrupted || stop_requested()) interrupted = true;
      failed.push_back(label);
      std::printf("[%zu/%zu] %s %-45s exit %d, see %s/stdout.log\n", finished, cells.size(),
                  interrupted ? "stopped" : "FAILED", label.c_str(), code, dir.c_str());
    }
    std::fflush(stdout);
    running.erase(it);
    interrupted = interrupted || stop_requested();
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sweep finished in %.0fs: %zu of %zu cells done\n", total, cells.size() - failed.size(), cells.size());

  if (opt.report) {
    try {
      const ReportResult rep = write_report(root);
      std::printf("\n%s\n", rep.table_markdown.c_str());
      for (const auto& f : rep.files_written) std::printf("wrote %s\n", f.c_str());
      for (const auto& w : rep.warnings) std::printf("warning: %s\n", w.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "report: %s\n", e.what());
    }
  }
  if (interrupted) {
    std::printf("interrupted: unfinished cells keep their checkpoints; re-run the same command to resume\n");
    return kInterrupted;
  }
  if (!failed.empty()) {
    std::fprintf(stderr, "%zu cell(s) failed: ", failed.size());
    for (const auto& f : failed) std::fprintf(stderr, "%s  ", f.c_str());
    std::fprintf(stderr, "\n");
    return kError;
  }
  return kOk;
}

}  // namespace pelab
