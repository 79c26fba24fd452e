#include "training/signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

namespace pelab {

namespace {
volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_signal = 0;
// What install_stop_handlers replaced (SIGINT, SIGTERM): the defaults in the command line, the
// interpreter's handlers in the Python module.
struct sigaction g_replaced[2];
bool g_installed = false;
std::atomic<int> g_writing{0};

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
std::mutex g_phase_mutex;  // phase() is written by the main thread and read by the stop deadline's
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

void throw_if_stopped(const std::string& what) {
  if (g_stop) throw Interrupted("interrupted while " + what);
}

int stop_exit_code() { return 128 + (g_signal ? int(g_signal) : SIGINT); }

void arm_stop_deadline(double seconds) {
  static std::atomic<bool> armed{false};
  if (armed.exchange(true)) return;
  std::thread([seconds] {
    using Clock = std::chrono::steady_clock;
    const auto tick = std::chrono::milliseconds(10);
    while (!g_stop) std::this_thread::sleep_for(tick);
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until || g_writing.load() > 0) std::this_thread::sleep_for(tick);
    std::string msg;
    {
      std::lock_guard<std::mutex> g(g_phase_mutex);
      msg = "interrupted" + (phase().empty() ? std::string() : " while " + phase()) +
            ": ended at the stop deadline (no safe point came sooner); no file was left half-written\n";
    }
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(stop_exit_code());
  }).detach();
}

void begin_output_write() { ++g_writing; }
void end_output_write() { --g_writing; }

void set_phase(const std::string& p) {
  std::lock_guard<std::mutex> g(g_phase_mutex);
  phase() = p;
}
const std::string& current_phase() { return phase(); }

}  // namespace pelab
