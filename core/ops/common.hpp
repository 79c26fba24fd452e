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

#include "core/parallel.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "core/tensor.hpp"

namespace pelab::detail {

// Uninitialized output of the given shape (every op fills all of it).
inline Tensor empty(const Shape& shape) { return Tensor(Array(shape), false); }

// Splitting an op's loops into the plan's pieces (core/parallel.hpp). A piece gets at least
// kParallelWork elements (below that, waking a thread costs more than it saves).
constexpr std::size_t kParallelWork = std::size_t(1) << 15;

// f(r0, r1) over row ranges of `rows` rows of `row_len` elements each.
inline std::size_t row_grain(std::size_t row_len) {
  return row_len >= kParallelWork ? 1 : kParallelWork / (row_len ? row_len : 1);
}
template <class F>
void for_rows(std::size_t rows, std::size_t row_len, F&& f) {
  if (shape_only()) return;  // the loop helpers are the kernels' skip points (core/shape_only.hpp)
  parallel::for_range(rows, row_grain(row_len), [&](std::size_t, std::size_t r0, std::size_t r1) { f(r0, r1); });
}

// f(j0, j1) over column ranges of a (rows, cols) matrix, in units of 16 columns (64-byte lines of
// floats: two threads never write one line), for sums over rows that keep their row order.
template <class F>
void for_cols(std::size_t rows, std::size_t cols, F&& f) {
  if (shape_only()) return;
  constexpr std::size_t kUnit = 16;
  const std::size_t units = (cols + kUnit - 1) / kUnit, per_unit = kUnit * (rows ? rows : 1);
  const std::size_t grain = per_unit >= kParallelWork ? 1 : kParallelWork / per_unit;
  parallel::for_range(units, grain, [&](std::size_t, std::size_t u0, std::size_t u1) {
    f(u0 * kUnit, std::min(cols, u1 * kUnit));
  });
}

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
  if (shape_only()) return;
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
