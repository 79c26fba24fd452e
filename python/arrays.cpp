// Integer arrays from Python, checked (python/arrays.hpp).
#include "python/arrays.hpp"

#include "python/bindings.hpp"

namespace pelab::python {

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

py::array_t<std::int64_t> integer_array(const py::object& obj, const std::string& argument, int rank) {
  const std::string expected = rank == 2 ? "a 2-d integer array (B, T)" : "a 1-d integer array (T,)";
  py::array a = py::array::ensure(obj);
  if (!a) value_error(argument, "expected " + expected + ", got " + std::string(py::str(py::type::of(obj))));
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    value_error(argument, "expected " + expected + ", got dtype " + std::string(py::str(a.dtype())));
  if (a.ndim() != rank) value_error(argument, "expected " + expected + ", got shape " + shape_text(a));
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    if (a.shape(i) == 0) value_error(argument, "expected " + expected + " with no empty axis, got shape " + shape_text(a));
  return py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
}

void copy_checked(const py::array_t<std::int64_t>& a, IndexArray& out, const std::string& argument,
                  std::int64_t limit, const std::string& what) {
  const std::int64_t* v = a.data();
  for (py::ssize_t i = 0; i < a.size(); ++i) {
    if (v[i] < 0 || v[i] >= limit)
      value_error(argument, "id " + std::to_string(v[i]) + " at flat index " + std::to_string(i) + " is not in [0, " +
                                std::to_string(limit) + ") (" + what + ")");
    out.data()[i] = static_cast<std::int32_t>(v[i]);
  }
}

}  // namespace pelab::python
