// The C++ side of the Python module `pelab` (python/pelab/__init__.py imports it as pelab._pelab).
#include "python/bindings.hpp"

PYBIND11_MODULE(_pelab, m) {
  m.doc() = "pelab's C++ core; use it through the package `pelab` (docs/python.md)";
  pelab::python::bind_errors(m);
  pelab::python::bind_catalog(m);
  pelab::python::bind_commands(m);
  pelab::python::bind_runs(m);
  pelab::python::bind_model(m);
}
