#include "training/signals.hpp"

#include <signal.h>

#include <csignal>

namespace pelab {

namespace {
volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_signal = 0;
// What install_stop_handlers replaced (SIGINT, SIGTERM): the defaults in the command line, the
// interpreter's handlers in the Python module.
struct sigaction g_replaced[2];
bool g_installed = false;

extern "C" void on_stop_signal(int sig) {
  if (g_stop) {  // second signal: give up on the clean stop
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
  g_stop = 1;
}

std::string& phase() {
  static std::string p;
  return p;
}
}  // namespace

void install_stop_handlers() {
  if (!g_installed) {
    sigaction(SIGINT, nullptr, &g_replaced[0]);
    sigaction(SIGTERM, nullptr, &g_replaced[1]);
    g_installed = true;
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}
void restore_default_stop_handlers() {
  if (!g_installed) return;
  sigaction(SIGINT, &g_replaced[0], nullptr);
  sigaction(SIGTERM, &g_replaced[1], nullptr);
  g_installed = false;
}
bool stop_requested() { return g_stop != 0; }
int stop_signal() { return g_signal; }
void request_stop() { g_stop = 1; }
void clear_stop() { g_stop = 0, g_signal = 0; }

void set_phase(const std::string& p) { phase() = p; }
const std::string& current_phase() { return phase(); }

}  // namespace pelab
