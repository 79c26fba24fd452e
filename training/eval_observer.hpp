// A watcher of the periodic evaluations of training, for the Python module's on_eval callback
// (pelab.train, docs/python.md): called with the step and the evaluation's metrics.jsonl record (JSON)
// once it is written; returning true stops the run there as an early stop does (a checkpoint, then the
// final evaluation). Unset everywhere else: the command line never sets it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace pelab {

struct EvalObserver {
  std::function<bool(std::size_t step, const std::string& record)> on_eval;
  bool stop = false;  // set when on_eval returned true; the trainer clears it as it stops
};

// The process's one observer (empty by default).
inline EvalObserver& eval_observer() {
  static EvalObserver observer;
  return observer;
}

}  // namespace pelab
