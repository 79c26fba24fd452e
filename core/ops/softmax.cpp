// softmax and log_softmax over the last axis: forward and backward side by side, row loops on raw pointers.
#include "core/ops/softmax.hpp"

#include <cmath>

#include "core/ops/common.hpp"

namespace pelab {

namespace {

// Rows and row length of x viewed as (rows, C); throws on 0-d input.
void row_dims(const Tensor& x, const char* op, std::size_t& rows, std::size_t& C) {
  detail::require_defined(x, op, "x");
  detail::require(x.ndim() >= 1, op, "needs at least 1 dim, got a 0-d tensor");
  C = x.shape().back();
  rows = C ? x.numel() / C : 0;
}

// Row maximum; -inf for an all -inf row.
inline real row_max(const real* xr, std::size_t C) {
  real m = xr[0];
  for (std::size_t j = 1; j < C; ++j) m = xr[j] > m ? xr[j] : m;
  return m;
}

}  // namespace

Tensor softmax(const Tensor& x) {
  const char* op = "softmax";
  std::size_t rows, C;
  row_dims(x, op, rows, C);
  Tensor out = detail::empty(x.shape());
  if (!shape_only()) {  // core/shape_only.hpp
    const real* px = x.data();
    real* py = out.mutable_data();
    for (std::size_t r = 0; r < rows; ++r) {
      const real* xr = px + r * C;
      real* yr = py + r * C;
      const real m = row_max(xr, C);
      real s = 0;
      for (std::size_t j = 0; j < C; ++j) {
        yr[j] = std::exp(xr[j] - m);
        s += yr[j];
      }
      const real inv = real(1) / s;
      for (std::size_t j = 0; j < C; ++j) yr[j] *= inv;
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    // Backward reads only y: x's value is not kept.
    tape.record(op, out, {x}, {out}, [rows, C](const BackwardCtx& c) {
      real* gx = c.grad(0);
      if (shape_only()) return;
      const real* py = c.saved(0);
      const real* pg = c.grad_out().data();
      for (std::size_t r = 0; r < rows; ++r) {
        const real* yr = py + r * C;
        const real* gr = pg + r * C;
        real* dr = gx + r * C;
        real dot = 0;  // sum(g * y)
        for (std::size_t j = 0; j < C; ++j) dot += gr[j] * yr[j];
        for (std::size_t j = 0; j < C; ++j) dr[j] += yr[j] * (gr[j] - dot);
      }
    });
  }
  return out;
}

Tensor log_softmax(const Tensor& x) {
  const char* op = "log_softmax";
  std::size_t rows, C;
  row_dims(x, op, rows, C);
  Tensor out = detail::empty(x.shape());
  if (!shape_only()) {  // core/shape_only.hpp
    const real* px = x.data();
    real* py = out.mutable_data();
    for (std::size_t r = 0; r < rows; ++r) {
      const real* xr = px + r * C;
      real* yr = py + r * C;
      const real m = row_max(xr, C);
      real s = 0;
      for (std::size_t j = 0; j < C; ++j) s += std::exp(xr[j] - m);
      const real shift = m + std::log(s);  // log sum exp
      for (std::size_t j = 0; j < C; ++j) yr[j] = xr[j] - shift;
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    // Backward reads only y: x's value is not kept.
    tape.record(op, out, {x}, {out}, [rows, C](const BackwardCtx& c) {
      real* gx = c.grad(0);
      if (shape_only()) return;
      const real* py = c.saved(0);
      const real* pg = c.grad_out().data();
      for (std::size_t r = 0; r < rows; ++r) {
        const real* yr = py + r * C;
        const real* gr = pg + r * C;
        real* dr = gx + r * C;
        real gs = 0;  // sum(g)
        for (std::size_t j = 0; j < C; ++j) gs += gr[j];
        for (std::size_t j = 0; j < C; ++j) dr[j] += gr[j] - std::exp(yr[j]) * gs;
      }
    });
  }
  return out;
}

}  // namespace pelab
