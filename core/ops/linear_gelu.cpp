// linear_gelu: y = gelu(x w^T + bias), forward and backward side by side.
#include <memory>

#include "core/blas.hpp"
#include "core/ops/common.hpp"
#include "core/ops/kernels.hpp"
#include "core/ops/linear_dims.hpp"
#include "core/ops/matmul.hpp"

namespace pelab {

Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const char* op = "linear_gelu";
  const detail::LinearDims ld = detail::linear_dims(op, x, w, bias);
  const std::size_t in = ld.in, F = ld.out, rows = ld.rows;
  Tape& tape = Tape::current();
  const bool record = tape.should_record({&x, &w, &bias});
  // GELU's derivative at the pre-activation (rows, F): what backward needs, op-private.
  std::shared_ptr<Array> deriv = record ? std::make_shared<Array>(Shape{rows, F}) : nullptr;
  Tensor out = detail::empty(ld.out_shape);
  {
    real* py = out.mutable_data();
    blas::gemm(false, true, rows, F, in, 1, x.data(), in, w.data(), in, 0, py, F);  // h = x w^T
    const real* pb = bias.defined() ? bias.data() : nullptr;
    real* pd = deriv ? deriv->data() : nullptr;
    detail::for_rows(rows, F, [&](std::size_t r0, std::size_t r1) { kernels::bias_gelu_rows(py, pb, pd, r0, r1, F); });
  }
  if (record) {
    // dx reads w and dw reads x (as linear); the pre-activation itself is not kept.
    const Tensor save_x = w.requires_grad() ? x : Tensor();
    const Tensor save_w = x.requires_grad() ? w : Tensor();
    tape.record(op, out, {x, w, bias}, {save_x, save_w}, [deriv, rows, in, F](const BackwardCtx& c) {
      // gh = g * gelu'(h) (rows, F), and db = its column sums, in one pass split by columns. gh overwrites
      // gelu'(h), read nowhere else and for the last time (a tape's backward runs once): no (rows, F)
      // buffer to take and no third stream through memory.
      real* gh = deriv->data();
      const real* pg = c.grad_out().data();
      real* db = c.grad(2);
      detail::for_cols(rows, F, [&](std::size_t j0, std::size_t j1) {
        kernels::mul_colsum_inplace(pg, gh, db, rows, F, j0, j1);
      });
      bool fresh = false;
      if (real* gx = c.grad_write(0, fresh))  // dx (rows, in) = gh w
        blas::gemm(false, false, rows, in, F, 1, gh, F, c.saved(1), in, fresh ? 0 : 1, gx, in);
      if (real* gw = c.grad_write(1, fresh))  // dw (F, in) = gh^T x
        blas::gemm(true, false, F, in, rows, 1, gh, F, c.saved(0), in, fresh ? 0 : 1, gw, in);
    });
  }
  return out;
}

}  // namespace pelab
