// Values between C++ and Python for the module's files.
#pragma once

#include <utility>
#include <variant>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/params/value.hpp"
#include "core/tensor.hpp"

namespace pelab::python {

// A setting's value as the Python object of its type: bool, int, float or str.
inline pybind11::object to_python(const Value& v) {
  return std::visit([](const auto& x) { return pybind11::object(pybind11::cast(x)); }, v);
}

// A float array the caller owns from now on, without a copy: numpy frees it with the array.
inline pybind11::array_t<float> to_numpy(Array&& value) {
  auto* owner = new Array(std::move(value));
  pybind11::capsule free_when_done(owner, [](void* p) { delete static_cast<Array*>(p); });
  std::vector<pybind11::ssize_t> shape(owner->shape().begin(), owner->shape().end());
  return pybind11::array_t<float>(shape, owner->data(), free_when_done);
}

}  // namespace pelab::python
