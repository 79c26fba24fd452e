// matmul and linear: forward and backward side by side. Backward uses beta = 1 so GEMMs
// accumulate straight into existing gradients.
#include "core/ops/matmul.hpp"

#include "core/blas.hpp"
#include "core/ops/common.hpp"
#include "core/ops/kernels.hpp"
#include "core/ops/linear_dims.hpp"

namespace pelab {

namespace {

struct MatmulDims {
  std::size_t batch = 1;  // product of A's leading dims
  std::size_t M = 0, N = 0, K = 0;
  bool b_batched = false;
  Shape out_shape;
};

MatmulDims matmul_dims(const Shape& a, const Shape& b, bool ta, bool tb) {
  const char* op = "matmul";
  MatmulDims d;
  auto fail = [&](const std::string& why) {
    throw Error(std::string(op) + ": " + why + " (A " + shape_str(a) + (ta ? "^T" : "") + ", B " +
                shape_str(b) + (tb ? "^T" : "") + ")");
  };
  if (a.size() < 2 || b.size() < 2) fail("both operands need at least 2 dims");
  const std::size_t ar = a[a.size() - 2], ac = a[a.size() - 1];
  const std::size_t br = b[b.size() - 2], bc = b[b.size() - 1];
  d.M = ta ? ac : ar;
  d.K = ta ? ar : ac;
  const std::size_t kb = tb ? bc : br;
  d.N = tb ? br : bc;
  if (d.K != kb) fail("inner dimensions differ: " + std::to_string(d.K) + " vs " + std::to_string(kb));
  for (std::size_t i = 0; i + 2 < a.size(); ++i) d.batch *= a[i];
  if (b.size() > 2) {
    d.b_batched = true;
    if (b.size() != a.size() || !std::equal(a.begin(), a.end() - 2, b.begin()))
      fail("batched B must have the same leading dims as A");
  }
  d.out_shape = a;
  d.out_shape[a.size() - 2] = d.M;
  d.out_shape[a.size() - 1] = d.N;
  return d;
}

}  // namespace

namespace detail {

LinearDims linear_dims(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias) {
  require_defined(x, op, "x");
  require_defined(w, op, "w");
  const Shape& xs = x.shape();
  require(w.ndim() == 2, op, "weight must be 2-D (out, in), got " + shape_str(w.shape()));
  require(xs.size() >= 1 && xs.back() == w.size(1), op,
          "input " + shape_str(xs) + " does not end in the weight's in-features " + shape_str(w.shape()));
  LinearDims d;
  d.in = w.size(1);
  d.out = w.size(0);
  d.rows = x.numel() / (d.in ? d.in : 1);
  if (bias.defined())
    require(bias.ndim() == 1 && bias.size(0) == d.out, op,
            "bias " + shape_str(bias.shape()) + " does not match weight " + shape_str(w.shape()));
  d.out_shape = xs;
  d.out_shape.back() = d.out;
  return d;
}

void linear_backward(const BackwardCtx& c, const real* g, std::size_t rows, std::size_t in, std::size_t out_f) {
  bool fresh = false;
  if (real* gx = c.grad_write(0, fresh))  // dx (rows, in) = g (rows, out) w (out, in)
    blas::gemm(false, false, rows, in, out_f, 1, g, out_f, c.saved(1), in, fresh ? 0 : 1, gx, in);
  if (real* gw = c.grad_write(1, fresh))  // dw (out, in) = g^T (out, rows) x (rows, in)
    blas::gemm(true, false, out_f, in, rows, 1, g, out_f, c.saved(0), in, fresh ? 0 : 1, gw, in);
  if (real* gb = c.grad(2))  // db = column sums of g in row order, columns split over threads
    for_cols(rows, out_f, [&](std::size_t j0, std::size_t j1) { kernels::colsum(g, gb, rows, out_f, j0, j1); });
}

}  // namespace detail

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  detail::require_defined(a, "matmul", "a");
  detail::require_defined(b, "matmul", "b");
  const MatmulDims d = matmul_dims(a.shape(), b.shape(), ta, tb);
  const std::size_t M = d.M, N = d.N, K = d.K;
  const std::size_t lda = ta ? M : K, ldb = tb ? K : N;
  const std::size_t sa = M * K, sb = d.b_batched ? K * N : 0, sc = M * N;
  // Shared 2-D B and plain A: the batch folds into M, one GEMM.
  const bool fold = !d.b_batched && !ta;

  Tensor out = detail::empty(d.out_shape);
  {
    const real *pa = a.data(), *pb = b.data();
    real* pc = out.mutable_data();
    if (fold)
      blas::gemm(false, tb, d.batch * M, N, K, 1, pa, lda, pb, ldb, 0, pc, N);
    else
      for (std::size_t i = 0; i < d.batch; ++i)
        blas::gemm(ta, tb, M, N, K, 1, pa + i * sa, lda, pb + i * sb, ldb, 0, pc + i * sc, N);
  }

  Tape& tape = Tape::current();
  if (tape.should_record({&a, &b})) {
    // dA reads B and dB reads A: each operand is kept only when the other one needs a gradient.
    const Tensor save_a = b.requires_grad() ? a : Tensor();
    const Tensor save_b = a.requires_grad() ? b : Tensor();
    tape.record("matmul", out, {a, b}, {save_a, save_b}, [d, ta, tb, lda, ldb, sa, sb, sc, fold](const BackwardCtx& c) {
      const std::size_t M = d.M, N = d.N, K = d.K;
      const real *pa = c.saved(0), *pb = c.saved(1), *pg = c.grad_out().data();
      // Each gradient is written whole by its GEMMs: beta 0 into a fresh buffer, 1 to accumulate.
      bool fresh = false;
      if (real* ga = c.grad_write(0, fresh)) {
        const real beta = fresh ? 0 : 1;
        if (fold) {
          blas::gemm(false, !tb, d.batch * M, K, N, 1, pg, N, pb, ldb, beta, ga, K);  // dA = dC op(B)^T
        } else {
          for (std::size_t i = 0; i < d.batch; ++i) {
            if (!ta)  // dA (M,K) = dC op(B)^T
              blas::gemm(false, !tb, M, K, N, 1, pg + i * sc, N, pb + i * sb, ldb, beta, ga + i * sa, lda);
            else  // dA stored (K,M) = op(B) dC^T
              blas::gemm(tb, true, K, M, N, 1, pb + i * sb, ldb, pg + i * sc, N, beta, ga + i * sa, lda);
          }
        }
      }
      if (real* gb = c.grad_write(1, fresh)) {
        const real beta = fresh ? 0 : 1;
        if (fold) {
          if (!tb)  // dB (K,N) = A^T dC over the folded batch
            blas::gemm(true, false, K, N, d.batch * M, 1, pa, lda, pg, N, beta, gb, ldb);
          else  // dB stored (N,K) = dC^T A
            blas::gemm(true, false, N, K, d.batch * M, 1, pg, N, pa, lda, beta, gb, ldb);
        } else if (d.b_batched) {
          for (std::size_t i = 0; i < d.batch; ++i) {
            if (!tb)  // dB (K,N) = op(A)^T dC
              blas::gemm(!ta, false, K, N, M, 1, pa + i * sa, lda, pg + i * sc, N, beta, gb + i * sb, ldb);
            else  // dB stored (N,K) = dC^T op(A)
              blas::gemm(true, ta, N, K, M, 1, pg + i * sc, N, pa + i * sa, lda, beta, gb + i * sb, ldb);
          }
        } else {  // a shared 2-D B: every batch adds into the same gradient
          for (std::size_t i = 0; i < d.batch; ++i) {
            const real bi = i == 0 ? beta : real(1);
            if (!tb)
              blas::gemm(!ta, false, K, N, M, 1, pa + i * sa, lda, pg + i * sc, N, bi, gb, ldb);
            else
              blas::gemm(true, ta, N, K, M, 1, pg + i * sc, N, pa + i * sa, lda, bi, gb, ldb);
          }
        }
      }
    });
  }
  return out;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const char* op = "linear";
  const detail::LinearDims ld = detail::linear_dims(op, x, w, bias);
  const std::size_t in = ld.in, out_f = ld.out, rows = ld.rows;
  Tensor out = detail::empty(ld.out_shape);
  {
    real* py = out.mutable_data();
    if (bias.defined()) {  // y = bias (broadcast rows), then y += x w^T with beta = 1
      const real* pbias = bias.data();
      detail::for_rows(rows, out_f, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) std::copy(pbias, pbias + out_f, py + r * out_f);
      });
    }
    blas::gemm(false, true, rows, out_f, in, 1, x.data(), in, w.data(), in, bias.defined() ? 1 : 0, py, out_f);
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x, &w, &bias})) {
    // dx reads w and dw reads x; the bias's value is never read.
    const Tensor save_x = w.requires_grad() ? x : Tensor();
    const Tensor save_w = x.requires_grad() ? w : Tensor();
    tape.record(op, out, {x, w, bias}, {save_x, save_w}, [rows, in, out_f](const BackwardCtx& c) {
      detail::linear_backward(c, c.grad_out().data(), rows, in, out_f);
    });
  }
  return out;
}

}  // namespace pelab
