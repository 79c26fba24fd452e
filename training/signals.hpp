// Ctrl-C / SIGTERM: request a clean stop. The trainer finishes its step, writes a checkpoint and
// exits saying how to resume. A second Ctrl-C falls back to the default (immediate) behaviour.
#pragma once

namespace pelab {

void install_stop_handlers();
bool stop_requested();
void request_stop();   // what the handler does; also for tests
void clear_stop();

}  // namespace pelab
