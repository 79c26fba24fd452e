// Shared helpers for op implementations (not part of the user-facing API).
//
// Every op records its backward with Tape::record(op, out, inputs, saved, fn) (core/tape.hpp):
// `saved` lists exactly the tensors whose values backward reads, and backward gets them, the output's
// gradient and the inputs' gradient buffers from its BackwardCtx. The closure never captures a Tensor
// (that keeps its value alive: a leak) nor a reference to one; only shapes, scalars and op-private
// arrays. tests/core/test_lifetimes.cpp lists every op with the values it may keep alive.
#pragma once

#include <algorithm>
#include <string>

#include "core/tape.hpp"
#include "core/tensor.hpp"

namespace pelab::detail {

// Uninitialized output of the given shape (every op fills all of it).
inline Tensor empty(const Shape& shape) { return Tensor(Array(shape), false); }

// Normalizes a possibly negative axis; throws naming the op on out-of-range axes.
inline std::size_t norm_axis(int axis, std::size_t ndim, const char* op) {
  const int nd = static_cast<int>(ndim);
  const int a = axis < 0 ? axis + nd : axis;
  if (a < 0 || a >= nd)
    throw Error(std::string(op) + ": axis " + std::to_string(axis) + " out of range for a " +
                std::to_string(ndim) + "-d tensor");
  return static_cast<std::size_t>(a);
}

inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string(op) + ": " + what);
}

inline void require_defined(const Tensor& t, const char* op, const char* name) {
  if (!t.defined()) throw Error(std::string(op) + ": argument '" + name + "' is an undefined tensor");
}

// NumPy broadcasting of two shapes; throws naming the op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Element strides of `in` viewed with shape `out` (right-aligned, 0 on broadcast axes).
Shape broadcast_strides(const Shape& in, const Shape& out);

// Calls f(i_out, i_a, i_b) for every element of `out`, where i_a / i_b index inputs broadcast to it.
// The fast paths (equal shapes, a scalar side, a trailing-suffix side) cover nearly all calls.
template <class F>
void for_each_broadcast(const Shape& out, const Shape& a, const Shape& b, F&& f) {
  const std::size_t n = shape_numel(out), na = shape_numel(a), nb = shape_numel(b);
  if (na == n && nb == n && a == b) {
    for (std::size_t i = 0; i < n; ++i) f(i, i, i);
    return;
  }
  auto suffix = [&](const Shape& s, std::size_t ns) {
    return ns == 1 || (s.size() <= out.size() && std::equal(s.rbegin(), s.rend(), out.rbegin()));
  };
  if (suffix(a, na) && suffix(b, nb)) {
    for (std::size_t i = 0; i < n; ++i) f(i, na == 1 ? 0 : i % na, nb == 1 ? 0 : i % nb);
    return;
  }
  // General case: odometer over the output index.
  const Shape sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  const std::size_t nd = out.size();
  Shape idx(nd, 0);
  std::size_t ia = 0, ib = 0;
  for (std::size_t i = 0; i < n; ++i) {
    f(i, ia, ib);
    for (std::size_t d = nd; d-- > 0;) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace pelab::detail
