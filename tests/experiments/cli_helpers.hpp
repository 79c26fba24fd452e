// Helpers for tests that drive the real `pelab` binary (PELAB_BINARY): a fresh temporary directory,
// a run with a hard time limit (a hang fails the test instead of stalling the suite), substring checks.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

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

inline bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace pelab::test
