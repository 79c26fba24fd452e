#include "experiments/sweep.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "experiments/report.hpp"
#include "experiments/run.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace pelab {

namespace {

struct Running {
  std::size_t index;
  std::chrono::steady_clock::time_point start;
};

std::string toml_literal(const Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return nlohmann::json(*s).dump();  // JSON string = TOML basic string
  return value_str(v);
}

// One line summarising a finished cell from its eval.json (in-distribution and longest length).
std::string cell_summary(const std::string& dir) {
  try {
    const auto j = nlohmann::json::parse(read_file(dir + "/eval.json"));
    const bool lm = j.value("is_lm", false);
    std::string in, out;
    for (const auto& r : j.at("results")) {
      std::string v;
      if (r.at("status") != "ok") v = "n/a";
      else {
        char buf[32];
        if (lm) std::snprintf(buf, sizeof buf, "loss %.3f", r.at("loss").get<double>());
        else std::snprintf(buf, sizeof buf, "acc %.1f%%", 100 * r.at("token_acc").get<double>());
        v = buf;
      }
      const std::string s = "@" + std::to_string(r.at("length").get<int>()) + " " + v;
      if (r.at("in_distribution").get<bool>() && r.at("length").get<std::size_t>() == j.at("train_len").get<std::size_t>())
        in = s;
      out = s;
    }
    return in + (in.empty() ? "" : ", ") + out;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

int run_sweep(const ExperimentConfig& cfg, const SweepOptions& opt) {
  const std::vector<SweepCell> cells = expand_sweep(cfg);
  const std::string root = opt.out_dir.empty() ? cfg.output_dir : opt.out_dir;
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
    write_file_atomic(dir + "/cell.toml", to_toml(cells[i].config));
    todo.push_back(i);
  }
  const int jobs = std::max(1, opt.jobs);
  std::printf("sweep %s: %zu cells (%zu already finished), %zu to run, %d at a time\n", root.c_str(), cells.size(),
              skipped, todo.size(), jobs);
  std::fflush(stdout);

  install_stop_handlers();
  std::map<pid_t, Running> running;
  std::vector<std::string> failed;
  std::size_t next = 0, finished = skipped;
  const auto t0 = std::chrono::steady_clock::now();
  bool interrupted = false;

  auto spawn = [&](std::size_t idx) {
    const SweepCell& c = cells[idx];
    const std::string dir = root + "/" + c.dir_name;
    std::vector<std::string> args = {opt.self_exe, "train", dir + "/cell.toml", "--out", dir, "--resume-or-start",
                                     "--label", c.label};
    for (const auto& [k, v] : c.assignment) {
      args.push_back("--assign");
      args.push_back(k + "=" + toml_literal(v));
    }
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
    if (rc != 0) throw Error("sweep: cannot start " + opt.self_exe + " for cell " + c.label);
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
    const SweepCell& c = cells[it->second.index];
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::string dir = root + "/" + c.dir_name;
    ++finished;
    if (code == 0 && fs::exists(dir + "/eval.json")) {
      std::printf("[%zu/%zu] done   %-45s %6.0fs  %s\n", finished, cells.size(), c.label.c_str(), secs,
                  cell_summary(dir).c_str());
    } else {
      if (code == kInterrupted || stop_requested()) interrupted = true;
      failed.push_back(c.label);
      std::printf("[%zu/%zu] %s %-45s exit %d, see %s/stdout.log\n", finished, cells.size(),
                  interrupted ? "stopped" : "FAILED", c.label.c_str(), code, dir.c_str());
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
