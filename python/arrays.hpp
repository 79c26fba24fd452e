// Integer arrays from Python, checked (python/model.cpp, python/insides.cpp): ValueError naming the
// argument for a wrong type, dtype, rank, shape or value.
#pragma once

#include <cstdint>
#include <string>

#include <pybind11/numpy.h>

#include "core/tensor.hpp"

namespace pelab::python {

namespace py = pybind11;

std::string shape_text(const py::array& a);  // "(2, 5)", "(5,)"
// `obj` as a C-contiguous int64 array, after checking that it holds integers of rank `rank` (1 or 2).
py::array_t<std::int64_t> integer_array(const py::object& obj, const std::string& argument, int rank);
// The values of `a` into `out`, each checked against [0, limit): `what` says what the limit is.
void copy_checked(const py::array_t<std::int64_t>& a, IndexArray& out, const std::string& argument,
                  std::int64_t limit, const std::string& what);

}  // namespace pelab::python
