// Helpers for tests that drive the real `pelab` binary (PELAB_BINARY): a fresh temporary directory,
// a run with a hard time limit (a hang fails the test instead of stalling the suite), substring checks.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include "test_paths.hpp"

namespace pelab::test {

// An empty directory under the system temp dir, unique to this test process.
inline std::string fresh_temp_dir(const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("pelab_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Runs `pelab ARGS` with stdout and stderr into `log`; its exit code, or -1 when it did not exit
// normally (killed after timeout_s seconds, or by a signal).
inline int run_cli(const std::string& args, const std::string& log, int timeout_s = 600) {
  const std::string cmd = "timeout -s KILL " + std::to_string(timeout_s) + " " + std::string(PELAB_BINARY) + " " +
                          args + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Starts `pelab ARGS` in the background (its own pid, stdout and stderr into `log`).
inline pid_t start_cli(const std::string& args, const std::string& log) {
  const std::string cmd = "exec " + std::string(PELAB_BINARY) + " " + args + " > " + log + " 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {  // no Catch handlers in the child: a signal before exec must not report a test failure
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// The exit code of `pid` (our child; 128 + signal when killed), or -1 when it runs past `seconds`
// (then it is killed, so no test leaves a process behind).
inline int wait_for(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

inline bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// Sets (or, given nullptr, unsets) an environment variable for a scope and restores it after; child
// processes started in the scope see the value.
struct ScopedEnv {
  std::string name, saved;
  bool had = false;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    if (const char* s = std::getenv(n.c_str())) had = true, saved = s;
    if (value)
      ::setenv(n.c_str(), value, 1);
    else
      ::unsetenv(n.c_str());
  }
  ~ScopedEnv() {
    if (had)
      ::setenv(name.c_str(), saved.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

}  // namespace pelab::test
