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

// Throws Interrupted("interrupted while WHAT") when a stop was requested: the poll read-only phases call
// between layers (ForwardOptions::between_layers in layers/transformer.hpp), tokens, rows or lengths.
void throw_if_stopped(const std::string& what);

// The exit code of a command that stopped on request: 128 + the signal (130 SIGINT, 143 SIGTERM), 130
// after request_stop().
int stop_exit_code();

// For read-only commands (eval, predict, probe), whose outputs are written whole at the end: once a stop
// is requested, the process ends within `seconds` even when no poll is reached (a single attention op at a
// large length can take longer), with stop_exit_code() and a line on stderr. It waits for a write of
// write_file_atomic (training/fs.hpp) in progress, so no output is left half-written. Training never
// arms it: it stops only at its step boundary, after the checkpoint.
void arm_stop_deadline(double seconds);
// write_file_atomic marks its writes, which the deadline lets finish.
void begin_output_write();
void end_output_write();

// What the process is doing now ("building the model", "evaluating length 4096"), for messages such as
// "out of memory while ...". Not thread-safe: set by the main thread only.
void set_phase(const std::string& phase);
const std::string& current_phase();

}  // namespace pelab
