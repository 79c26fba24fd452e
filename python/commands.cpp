// The command line's commands from Python: pelab.train, pelab.sweep and pelab.report
// (python/pelab/__init__.py) turn their arguments into a `pelab` command line, which run_command parses
// and runs exactly as the executable does (experiments/cli/command.hpp), without the GIL, with the
// command's own Ctrl-C handling (training/signals.hpp) in place of the interpreter's while it runs.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <pybind11/stl.h>

#include "experiments/cli/command.hpp"
#include "experiments/run/run.hpp"
#include "python/bindings.hpp"
#include "python/stop.hpp"
#include "training/eval_observer.hpp"
#include "training/signals.hpp"

namespace pelab::python {

namespace {

// on_eval(step, metrics) -> bool of pelab.train, as the trainer's EvalObserver (training/eval_observer.hpp)
// for one command: called with the GIL; true (or an exception, raised once the command is done) stops the
// run as an early stop does.
class OnEval {
 public:
  explicit OnEval(const py::object& callback) {
    if (callback.is_none()) return;
    eval_observer() = EvalObserver();
    eval_observer().on_eval = [this, callback](std::size_t step, const std::string& record) {
      py::gil_scoped_acquire locked;
      try {
        const py::object metrics = py::module_::import("json").attr("loads")(record);
        return py::bool_(callback(step, metrics)).cast<bool>();
      } catch (py::error_already_set& e) {
        error_ = std::make_unique<py::error_already_set>(std::move(e));
        return true;
      }
    };
  }
  ~OnEval() { eval_observer() = EvalObserver(); }
  OnEval(const OnEval&) = delete;
  OnEval& operator=(const OnEval&) = delete;
  void raise_error() {  // the callback's exception, if any (with the GIL)
    if (error_) throw std::move(*error_);
  }

 private:
  std::unique_ptr<py::error_already_set> error_;
};

// `pelab ARGS...` parsed and run; returns the command's exit code (what `pelab` would exit with).
int run_command(const std::vector<std::string>& args, const py::object& on_eval) {
  std::vector<std::string> words = {"pelab"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(words.size());

  CLI::App app{"pelab"};
  cli::Commands commands;
  cli::add_commands(app, commands);
  try {
    app.parse(argc, argv.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    throw py::value_error(e.what());
  }
  const cli::Command* command = nullptr;
  for (const cli::Command& c : commands)
    if (c.app->parsed()) command = &c;
  if (!command) throw py::value_error("no command given: expected one of train, sweep, eval, report, ...");

  int rc = kOk;
  bool stopped = false;
  OnEval observer(on_eval);
  {
    StopScope scope(false);  // the command installs pelab's handlers itself
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> gemm(gemm_mutex());  // a command switches the GEMM path to its run's
    set_phase("starting");
    rc = command->run({argc, argv.data()});  // exceptions: bind_errors translates them
    stopped = stop_requested() || rc == kInterrupted;
    std::fflush(stdout);
    std::fflush(stderr);
  }
  observer.raise_error();
  if (stopped) {
    PyErr_SetString(PyExc_KeyboardInterrupt, ("pelab " + args.at(0) + " stopped (see above how to resume)").c_str());
    throw py::error_already_set();
  }
  return rc;
}

}  // namespace

void bind_commands(py::module_& m) {
  m.def("run_command", &run_command, py::arg("args"), py::arg("on_eval") = py::none(),
        "Runs `pelab ARGS...` as the command line does (same files, same messages) and returns its exit code; "
        "errors raise pelab.Error (pelab.ConfigError for config mistakes), bad command lines ValueError, Ctrl-C "
        "KeyboardInterrupt after the command's clean stop. on_eval(step, metrics) -> bool: called after each "
        "periodic evaluation of training; true stops the run there (as an early stop).");
  m.def("set_executable", &cli::set_pelab_executable, py::arg("path"),
        "The pelab executable a sweep starts for each cell.");
  m.def("executable", &cli::pelab_executable, "The pelab executable a sweep starts for each cell.");
}

}  // namespace pelab::python
