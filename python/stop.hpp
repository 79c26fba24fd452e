// Ctrl-C in the Python module: while a long call runs without the GIL, pelab's own SIGINT / SIGTERM
// handlers (training/signals.hpp) replace the interpreter's, so the call's polls (between layers, tokens,
// examples, steps) see the request and stop within a second; the interpreter's handlers are back however
// the call ends, and a stopped call raises KeyboardInterrupt (python/errors.cpp translates Interrupted).
#pragma once

#include <signal.h>

#include "training/signals.hpp"

namespace pelab::python {

class StopScope {
 public:
  // install: put pelab's handlers in place now (a command installs its own: install = false).
  explicit StopScope(bool install = true) {
    sigaction(SIGINT, nullptr, &int_);
    sigaction(SIGTERM, nullptr, &term_);
    clear_stop();
    if (install) install_stop_handlers();
  }
  ~StopScope() {
    restore_default_stop_handlers();
    sigaction(SIGINT, &int_, nullptr);
    sigaction(SIGTERM, &term_, nullptr);
    clear_stop();
  }
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;

 private:
  struct sigaction int_, term_;
};

}  // namespace pelab::python
