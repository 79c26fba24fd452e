// C++ exceptions as Python ones (python/bindings.hpp, bind_errors).
#include <filesystem>
#include <new>

#include "experiments/cli/command.hpp"
#include "experiments/config/config.hpp"
#include "python/bindings.hpp"
#include "training/signals.hpp"

namespace pelab::python {

namespace {

PyObject* g_error = nullptr;         // pelab.Error
PyObject* g_config_error = nullptr;  // pelab.ConfigError

PyObject* new_exception(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = "pelab." + std::string(name);
  PyObject* e = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!e) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(e));
  return e;
}

}  // namespace

void value_error(const std::string& argument, const std::string& what) {
  throw py::value_error(argument + ": " + what);
}

void not_found(const std::string& argument, const std::string& what) {
  PyErr_SetString(PyExc_FileNotFoundError, (argument + ": " + what).c_str());
  throw py::error_already_set();
}

void bind_errors(py::module_& m) {
  g_error = new_exception(m, "Error", PyExc_RuntimeError,
                          "What the pelab command line reports as 'error: ...' (exit code 2).");
  py::tuple bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError));
  g_config_error = new_exception(m, "ConfigError", bases.ptr(),
                                 "A bad config file or setting; the message starts with file:line or --set KEY=VALUE.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      PyErr_SetString(g_config_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    } catch (const Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const std::bad_alloc& e) {
      PyErr_SetString(PyExc_MemoryError, cli::describe_failure(e).message.c_str());
    } catch (const std::filesystem::filesystem_error& e) {
      PyErr_SetString(PyExc_OSError, cli::describe_failure(e).message.c_str());
    }
  });
}

}  // namespace pelab::python
