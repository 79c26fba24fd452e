// Ctrl-C / SIGTERM: request a clean stop. Every long phase checks the flag at its own safe points: the
// trainer between steps (it writes a checkpoint and exits saying how to resume), evaluation between
// batches (throwing Interrupted), a sweep while it waits for its cells (it forwards the signal to them).
// A second Ctrl-C falls back to the default (immediate) behaviour.
#pragma once

#include <stdexcept>
#include <string>

namespace pelab {

void install_stop_handlers();
// Back to the handlers install_stop_handlers replaced: the default actions in the command line (the
// signal ends the process at once), the interpreter's in the Python module. For phases that have no
// safe point to stop at and write only whole files, e.g. a sweep's report.
void restore_default_stop_handlers();
bool stop_requested();
int stop_signal();     // the signal that requested the stop (SIGINT or SIGTERM); 0 after request_stop()
void request_stop();   // what the handler does; also for tests
void clear_stop();

// Thrown by a phase that stopped at a safe point because a stop was requested.
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the process is doing now ("building the model", "evaluating length 4096"), for messages such as
// "out of memory while ...". Not thread-safe: set by the main thread only.
void set_phase(const std::string& phase);
const std::string& current_phase();

}  // namespace pelab
