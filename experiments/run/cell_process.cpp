#include "experiments/run/cell_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/tensor.hpp"  // Error

extern char** environ;

namespace pelab {

pid_t spawn_cell(const std::vector<std::string>& argv, const std::string& log) {
  // Everything the child needs is prepared here: between fork and exec only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) throw Error("cannot open the cell log " + log + ": " + std::strerror(errno));
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(130);  // the parent died before prctl took effect
    // The cell decides its own signal handling; start it from the defaults.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execve(args[0], args.data(), environ);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(out);
  if (in >= 0) ::close(in);
  if (pid < 0) throw Error("cannot start " + argv.at(0) + " (fork): " + std::strerror(fork_errno));
  ::setpgid(pid, pid);  // also here, so the group exists before any signal is forwarded (EACCES after exec is fine)
  return pid;
}

void signal_cells(const std::vector<pid_t>& pids, int sig) {
  for (pid_t p : pids) ::kill(-p, sig);
}

}  // namespace pelab
