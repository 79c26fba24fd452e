// The Python module _pelab (docs/python.md): one bind_* function per topic, each in its own file, called
// by module.cpp. python/pelab/__init__.py wraps it into the package users import.
#pragma once

#include <mutex>
#include <string>

#include <pybind11/pybind11.h>

namespace pelab::python {

namespace py = pybind11;

// errors.cpp: pelab.Error (RuntimeError) and pelab.ConfigError (pelab.Error and ValueError) for the
// C++ exceptions, MemoryError and OSError with the command line's messages, KeyboardInterrupt for a
// stopped phase (training/signals.hpp).
void bind_errors(py::module_& m);
// Raise ValueError / FileNotFoundError: "ARGUMENT: what".
[[noreturn]] void value_error(const std::string& argument, const std::string& what);
[[noreturn]] void not_found(const std::string& argument, const std::string& what);

// catalog.cpp: encodings(), tasks(), optimizers() with their parameters.
void bind_catalog(py::module_& m);
// commands.cpp: run_command(args): the command line's commands (train, sweep, eval, report, ...).
void bind_commands(py::module_& m);
// runs.cpp: what a run or sweep directory holds: its config text, checkpoints, eval.json, results.
void bind_runs(py::module_& m);
// model.cpp: Model: a trained run's model at a checkpoint (logits, attention, generate).
void bind_model(py::module_& m);
// model.cpp: held by whatever switches the process's GEMM path ([train] gemm, core/blas.hpp) and computes
// on it: a model's load and forward passes, a command. Take it with the GIL released.
std::mutex& gemm_mutex();

}  // namespace pelab::python
