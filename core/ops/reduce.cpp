// sum / mean / max: forward and backward side by side.
//
// The input is viewed with size-1 axes dropped and adjacent axes of the same kind (kept / reduced)
// merged. Nearly every call then has the form (outer, reduced, inner), with any part possibly 1:
// reduce over trailing axes (inner = 1: contiguous rows) or over leading axes (outer = 1: accumulate
// whole rows). Those run as plain pointer loops; other patterns (e.g. axes {0, 2} of (B, T, C)) use
// an odometer over the input.
#include "core/ops/reduce.hpp"

#include <cmath>

#include "core/ops/common.hpp"

namespace pelab {

namespace {

struct ReduceGeom {
  Shape out_shape;
  std::size_t count = 1;  // elements reduced into each output
  // Simple form (outer, reduced, inner).
  bool simple = true;
  std::size_t outer = 1, r = 1, inner = 1;
  // General form: merged dims and, per dim, the output stride (0 on reduced dims).
  std::vector<std::size_t> dims, ostride;
};

ReduceGeom reduce_geom(const Shape& shape, const std::vector<int>& axes, bool keepdims, const char* op) {
  const std::size_t nd = shape.size();
  std::vector<bool> red(nd, false);
  for (int a : axes) {
    const std::size_t k = detail::norm_axis(a, nd, op);
    if (red[k]) {
      std::string list;
      for (std::size_t i = 0; i < axes.size(); ++i) list += (i ? ", " : "") + std::to_string(axes[i]);
      throw Error(std::string(op) + ": axis " + std::to_string(a) + " appears twice in axes (" + list +
                  ") for a " + std::to_string(nd) + "-d tensor");
    }
    red[k] = true;
  }
  ReduceGeom G;
  for (std::size_t i = 0; i < nd; ++i) {
    if (!red[i]) {
      G.out_shape.push_back(shape[i]);
    } else {
      G.count *= shape[i];
      if (keepdims) G.out_shape.push_back(1);
    }
  }
  // Merge: drop size-1 dims, fuse runs of the same kind.
  std::vector<bool> kind;
  for (std::size_t i = 0; i < nd; ++i) {
    if (shape[i] == 1) continue;
    if (!kind.empty() && kind.back() == red[i]) {
      G.dims.back() *= shape[i];
    } else {
      G.dims.push_back(shape[i]);
      kind.push_back(red[i]);
    }
  }
  // Simple when the kinds read kept? reduced? kept?.
  std::size_t g = 0;
  if (g < kind.size() && !kind[g]) G.outer = G.dims[g++];
  if (g < kind.size() && kind[g]) G.r = G.dims[g++];
  if (g < kind.size() && !kind[g]) G.inner = G.dims[g++];
  G.simple = g == kind.size();
  if (!G.simple) {
    G.ostride.assign(G.dims.size(), 0);
    std::size_t s = 1;
    for (std::size_t d = G.dims.size(); d-- > 0;)
      if (!kind[d]) {
        G.ostride[d] = s;
        s *= G.dims[d];
      }
  }
  return G;
}

// General form: calls row(i_in, i_out) for each run of the last merged dim, in memory order. The run
// is contiguous in the input and, in the output, either one element (last dim reduced) or contiguous.
template <class F>
void for_each_general(const ReduceGeom& G, std::size_t numel, F&& row) {
  if (numel == 0) return;
  const std::size_t nd = G.dims.size(), nlast = G.dims[nd - 1];
  std::vector<std::size_t> idx(nd, 0);
  std::size_t io = 0;
  for (std::size_t i = 0; i < numel; i += nlast) {
    row(i, io);
    for (std::size_t d = nd - 1; d-- > 0;) {
      ++idx[d];
      io += G.ostride[d];
      if (idx[d] < G.dims[d]) break;
      io -= G.ostride[d] * G.dims[d];
      idx[d] = 0;
    }
  }
}

// Sum of a contiguous row in double (long float sums lose digits); four partial sums break the
// add-latency chain.
inline double sum_row(const real* p, std::size_t n) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    a0 += p[k];
    a1 += p[k + 1];
    a2 += p[k + 2];
    a3 += p[k + 3];
  }
  for (; k < n; ++k) a0 += p[k];
  return (a0 + a1) + (a2 + a3);
}

// out = scale * (sum of x over the axes); backward adds scale * g broadcast back over them.
Tensor reduce_sum(const char* op, const Tensor& x, const std::vector<int>& axes, bool keepdims, bool mean) {
  detail::require_defined(x, op, "x");
  ReduceGeom G = reduce_geom(x.shape(), axes, keepdims, op);
  const real scale = mean ? real(1) / real(G.count) : real(1);  // count 0: inf, so 0 * inf = nan
  Tensor out = detail::empty(G.out_shape);
  if (!shape_only()) {  // core/shape_only.hpp
    const real* px = x.data();
    real* po = out.mutable_data();
    const std::size_t n_out = out.numel();
    if (G.simple && G.inner == 1) {
      // Contiguous rows.
      for (std::size_t o = 0; o < G.outer; ++o) po[o] = static_cast<real>(sum_row(px + o * G.r, G.r) * scale);
    } else if (G.simple) {
      // (outer, r, inner): add whole rows of length inner.
      for (std::size_t i = 0; i < n_out; ++i) po[i] = 0;
      for (std::size_t o = 0; o < G.outer; ++o) {
        real* dst = po + o * G.inner;
        for (std::size_t k = 0; k < G.r; ++k) {
          const real* src = px + (o * G.r + k) * G.inner;
          for (std::size_t j = 0; j < G.inner; ++j) dst[j] += src[j];
        }
      }
      if (mean)
        for (std::size_t i = 0; i < n_out; ++i) po[i] *= scale;
    } else {
      for (std::size_t i = 0; i < n_out; ++i) po[i] = 0;
      const std::size_t nlast = G.dims.back();
      const bool last_reduced = G.ostride.back() == 0;
      for_each_general(G, x.numel(), [&](std::size_t i, std::size_t io) {
        if (last_reduced)
          po[io] += static_cast<real>(sum_row(px + i, nlast));
        else
          for (std::size_t k = 0; k < nlast; ++k) po[io + k] += px[i + k];
      });
      if (mean)
        for (std::size_t i = 0; i < n_out; ++i) po[i] *= scale;
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [G, scale, n_in = x.numel()](const BackwardCtx& c) {
      real* gx = c.grad(0);
      if (shape_only()) return;
      const real* pg = c.grad_out().data();
      if (G.simple) {
        for (std::size_t o = 0; o < G.outer; ++o) {
          const real* src = pg + o * G.inner;
          for (std::size_t k = 0; k < G.r; ++k) {
            real* dst = gx + (o * G.r + k) * G.inner;
            for (std::size_t j = 0; j < G.inner; ++j) dst[j] += src[j] * scale;
          }
        }
      } else {
        const std::size_t nlast = G.dims.back(), slast = G.ostride.back();
        for_each_general(G, n_in, [&](std::size_t i, std::size_t io) {
          for (std::size_t k = 0; k < nlast; ++k) gx[i + k] += pg[io + k * slast] * scale;
        });
      }
    });
  }
  return out;
}

std::vector<int> all_axes(const Tensor& x, const char* op) {
  detail::require_defined(x, op, "x");
  std::vector<int> axes(x.ndim());
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
  return axes;
}

// Whether v replaces the running maximum: strictly greater keeps the first of ties; the first nan
// wins and is never replaced. One compare in the common case (v <= best).
inline bool beats(real v, real best) {
  return !(v <= best) && (v > best || (std::isnan(v) && !std::isnan(best)));
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce_sum("sum", x, all_axes(x, "sum"), false, false); }
Tensor sum(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return reduce_sum("sum", x, axes, keepdims, false);
}
Tensor mean(const Tensor& x) { return reduce_sum("mean", x, all_axes(x, "mean"), false, true); }
Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return reduce_sum("mean", x, axes, keepdims, true);
}

Tensor max(const Tensor& x, int axis, bool keepdims) {
  const char* op = "max";
  detail::require_defined(x, op, "x");
  const Shape& shape = x.shape();
  const std::size_t a = detail::norm_axis(axis, shape.size(), op);
  if (shape[a] == 0)
    throw Error(std::string(op) + ": cannot reduce over axis " + std::to_string(axis) + " of size 0 (shape " +
                shape_str(shape) + ")");
  // (outer, r, inner) around the axis.
  std::size_t outer = 1, inner = 1;
  const std::size_t r = shape[a];
  for (std::size_t i = 0; i < a; ++i) outer *= shape[i];
  for (std::size_t i = a + 1; i < shape.size(); ++i) inner *= shape[i];
  Shape out_shape;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (i != a) out_shape.push_back(shape[i]);
    else if (keepdims) out_shape.push_back(1);

  Tensor out = detail::empty(out_shape);
  std::vector<std::size_t> arg(outer * inner, 0);  // first argmax along the axis, per output
  if (!shape_only()) {  // core/shape_only.hpp
    const real* px = x.data();
    real* po = out.mutable_data();
    if (inner == 1) {
      // Reduce over the last axis: scan each contiguous row with the best in a register.
      for (std::size_t o = 0; o < outer; ++o) {
        const real* row = px + o * r;
        real best = row[0];
        std::size_t bi = 0;
        for (std::size_t k = 1; k < r; ++k)
          if (beats(row[k], best)) {
            best = row[k];
            bi = k;
          }
        po[o] = best;
        arg[o] = bi;
      }
    } else {
      // Row by row over the axis (contiguous), keeping the running best per output.
      for (std::size_t o = 0; o < outer; ++o) {
        const real* p = px + o * r * inner;
        real* best = po + o * inner;
        std::size_t* bi = arg.data() + o * inner;
        for (std::size_t j = 0; j < inner; ++j) best[j] = p[j];
        for (std::size_t k = 1; k < r; ++k) {
          const real* row = p + k * inner;
          for (std::size_t j = 0; j < inner; ++j)
            if (beats(row[j], best[j])) {
              best[j] = row[j];
              bi[j] = k;
            }
        }
      }
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    // Backward reads only the argmax indices, not x's values: nothing to save.
    tape.record(op, out, {x}, {}, [arg = std::move(arg), r, inner](const BackwardCtx& c) {
      real* gx = c.grad(0);
      const real* pg = c.grad_out().data();
      for (std::size_t o = 0, n = shape_only() ? 0 : arg.size() / inner; o < n; ++o)
        for (std::size_t j = 0; j < inner; ++j) {
          const std::size_t i = o * inner + j;
          gx[(o * r + arg[i]) * inner + j] += pg[i];
        }
    });
  }
  return out;
}

}  // namespace pelab
