// Values between C++ and Python for the module's files.
#pragma once

#include <variant>

#include <pybind11/pybind11.h>

#include "core/params/value.hpp"

namespace pelab::python {

// A setting's value as the Python object of its type: bool, int, float or str.
inline pybind11::object to_python(const Value& v) {
  return std::visit([](const auto& x) { return pybind11::object(pybind11::cast(x)); }, v);
}

}  // namespace pelab::python
