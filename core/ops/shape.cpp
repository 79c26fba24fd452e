// reshape, permute / transpose, slice, concat, broadcast_to: forward and backward side by side.
// None of these backward functions reads a value, so nothing is saved for version checks.
#include "core/ops/shape.hpp"

#include <algorithm>

#include "core/ops/common.hpp"

namespace pelab {

namespace {

// A walk over a row-major output whose elements come from a source at per-dim strides (a permuted
// or broadcast view). Size-1 dims are dropped and adjacent dims merged when the source steps through
// them as one, so the innermost run is as long as possible (often a contiguous block or a fill).
struct Walk {
  std::vector<std::size_t> size, stride;
  std::size_t numel = 0;
};

Walk make_walk(const Shape& out_shape, const std::vector<std::size_t>& src_stride) {
  Walk w;
  w.numel = shape_numel(out_shape);
  for (std::size_t i = 0; i < out_shape.size(); ++i) {
    const std::size_t n = out_shape[i], s = src_stride[i];
    if (n == 1) continue;
    if (!w.size.empty() && w.stride.back() == n * s) {  // stepping the outer dim once == n inner steps
      w.size.back() *= n;
      w.stride.back() = s;
    } else {
      w.size.push_back(n);
      w.stride.push_back(s);
    }
  }
  if (w.size.empty()) {  // a single element
    w.size.push_back(1);
    w.stride.push_back(0);
  }
  return w;
}

// Calls run(out_offset, src_offset, len, src_stride) for each innermost run, in output order.
template <class F>
void for_each_run(const Walk& w, F&& run) {
  if (w.numel == 0 || shape_only()) return;  // core/shape_only.hpp: no kernels
  const std::size_t od = w.size.size() - 1, len = w.size[od], st = w.stride[od];
  const std::size_t outer = w.numel / len;
  std::vector<std::size_t> idx(od, 0);
  std::size_t src = 0;
  for (std::size_t o = 0; o < outer; ++o) {
    run(o * len, src, len, st);
    for (std::size_t k = od; k-- > 0;) {  // odometer over the outer dims
      ++idx[k];
      src += w.stride[k];
      if (idx[k] < w.size[k]) break;
      src -= w.stride[k] * w.size[k];
      idx[k] = 0;
    }
  }
}

std::vector<std::size_t> row_major_strides(const Shape& s) {
  std::vector<std::size_t> st(s.size());
  std::size_t acc = 1;
  for (std::size_t d = s.size(); d-- > 0;) {
    st[d] = acc;
    acc *= s[d];
  }
  return st;
}

// dst (shape permuted from src_shape by axes) = or += src read through the permutation.
template <bool Accumulate>
void permute_into(const real* src, const Shape& src_shape, const std::vector<std::size_t>& axes, real* dst) {
  const std::vector<std::size_t> st = row_major_strides(src_shape);
  Shape out_shape(axes.size());
  std::vector<std::size_t> src_stride(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    out_shape[i] = src_shape[axes[i]];
    src_stride[i] = st[axes[i]];
  }
  for_each_run(make_walk(out_shape, src_stride), [&](std::size_t o, std::size_t s, std::size_t len, std::size_t stride) {
    const real* ps = src + s;
    real* pd = dst + o;
    if (stride == 1) {
      if (Accumulate)
        for (std::size_t j = 0; j < len; ++j) pd[j] += ps[j];
      else
        std::copy(ps, ps + len, pd);
    } else {
      for (std::size_t j = 0; j < len; ++j) {
        if (Accumulate)
          pd[j] += ps[j * stride];
        else
          pd[j] = ps[j * stride];
      }
    }
  });
}

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "[";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  const char* op = "reshape";
  detail::require_defined(x, op, "x");
  detail::require(shape_numel(shape) == x.numel(), op,
                  "cannot reshape " + shape_str(x.shape()) + " (" + std::to_string(x.numel()) + " elements) to " +
                      shape_str(shape) + " (" + std::to_string(shape_numel(shape)) + " elements)");
  Tensor out = detail::empty(shape);
  if (!shape_only()) std::copy(x.data(), x.data() + x.numel(), out.mutable_data());
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [](const BackwardCtx& c) {
      real* gx = c.grad(0);
      const real* pg = c.grad_out().data();
      for (std::size_t i = 0, n = shape_only() ? 0 : c.grad_out().size(); i < n; ++i) gx[i] += pg[i];
    });
  }
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int>& axes) {
  const char* op = "permute";
  detail::require_defined(x, op, "x");
  const std::size_t nd = x.ndim();
  detail::require(axes.size() == nd, op,
                  "axes " + axes_str(axes) + " do not match the " + std::to_string(nd) + " dims of " +
                      shape_str(x.shape()));
  std::vector<std::size_t> ax(nd), inv(nd, nd);
  for (std::size_t i = 0; i < nd; ++i) {
    ax[i] = detail::norm_axis(axes[i], nd, op);
    detail::require(inv[ax[i]] == nd, op,
                    "axes " + axes_str(axes) + " are not a permutation of the " + std::to_string(nd) + " dims of " +
                        shape_str(x.shape()));
    inv[ax[i]] = i;
  }
  Shape out_shape(nd);
  for (std::size_t i = 0; i < nd; ++i) out_shape[i] = x.shape()[ax[i]];
  Tensor out = detail::empty(out_shape);
  permute_into<false>(x.data(), x.shape(), ax, out.mutable_data());
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    // dx = g permuted back by the inverse permutation.
    tape.record(op, out, {x}, {}, [inv](const BackwardCtx& c) {
      permute_into<true>(c.grad_out().data(), c.grad_out().shape(), inv, c.grad(0));
    });
  }
  return out;
}

Tensor transpose(const Tensor& x, int a, int b) {
  const char* op = "transpose";
  detail::require_defined(x, op, "x");
  const std::size_t nd = x.ndim();
  const std::size_t ia = detail::norm_axis(a, nd, op), ib = detail::norm_axis(b, nd, op);
  std::vector<int> axes(nd);
  for (std::size_t i = 0; i < nd; ++i) axes[i] = static_cast<int>(i);
  std::swap(axes[ia], axes[ib]);
  return permute(x, axes);
}

Tensor slice(const Tensor& x, int axis, std::size_t start, std::size_t stop) {
  const char* op = "slice";
  detail::require_defined(x, op, "x");
  const Shape& xs = x.shape();
  const std::size_t ax = detail::norm_axis(axis, xs.size(), op);
  const std::size_t dim = xs[ax];
  detail::require(start <= stop && stop <= dim, op,
                  "range [" + std::to_string(start) + ", " + std::to_string(stop) + ") is invalid for axis " +
                      std::to_string(axis) + " of size " + std::to_string(dim) + " in shape " + shape_str(xs));
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= xs[d];
  for (std::size_t d = ax + 1; d < xs.size(); ++d) inner *= xs[d];
  const std::size_t block = (stop - start) * inner, row = dim * inner, first = start * inner;
  Shape out_shape = xs;
  out_shape[ax] = stop - start;
  Tensor out = detail::empty(out_shape);
  {
    const real* px = x.data();
    real* po = out.mutable_data();
    for (std::size_t o = 0, n = shape_only() ? 0 : outer; o < n; ++o)
      std::copy(px + o * row + first, px + o * row + first + block, po + o * block);
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [outer, block, row, first](const BackwardCtx& c) {
      real* gx = c.grad(0);
      const real* pg = c.grad_out().data();
      for (std::size_t o = 0, n = shape_only() ? 0 : outer; o < n; ++o) {
        real* dst = gx + o * row + first;
        const real* src = pg + o * block;
        for (std::size_t j = 0; j < block; ++j) dst[j] += src[j];
      }
    });
  }
  return out;
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  const char* op = "concat";
  detail::require(!xs.empty(), op, "no tensors to concatenate");
  for (std::size_t k = 0; k < xs.size(); ++k)
    detail::require(xs[k].defined(), op, "input " + std::to_string(k) + " is an undefined tensor");
  const Shape& s0 = xs[0].shape();
  const std::size_t ax = detail::norm_axis(axis, s0.size(), op);
  std::size_t total = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const Shape& sk = xs[k].shape();
    bool same = sk.size() == s0.size();
    for (std::size_t d = 0; same && d < sk.size(); ++d) same = d == ax || sk[d] == s0[d];
    detail::require(same, op,
                    "input " + std::to_string(k) + " has shape " + shape_str(sk) + " but input 0 has shape " +
                        shape_str(s0) + "; only axis " + std::to_string(axis) + " may differ");
    total += sk[ax];
  }
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= s0[d];
  for (std::size_t d = ax + 1; d < s0.size(); ++d) inner *= s0[d];
  Shape out_shape = s0;
  out_shape[ax] = total;
  const std::size_t row = total * inner;
  // Input k fills columns [first[k], first[k] + block[k]) of every (outer) row of the output.
  std::vector<std::size_t> first(xs.size()), block(xs.size());
  for (std::size_t k = 0, acc = 0; k < xs.size(); ++k) {
    first[k] = acc * inner;
    block[k] = xs[k].shape()[ax] * inner;
    acc += xs[k].shape()[ax];
  }
  Tensor out = detail::empty(out_shape);
  {
    real* po = out.mutable_data();
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const real* px = xs[k].data();
      const std::size_t b = block[k];
      for (std::size_t o = 0, n = shape_only() ? 0 : outer; o < n; ++o) std::copy(px + o * b, px + (o + 1) * b, po + o * row + first[k]);
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record(xs)) {
    tape.record(op, out, xs, {}, [first, block, outer, row](const BackwardCtx& c) {
      const real* pg = c.grad_out().data();
      for (std::size_t k = 0; k < first.size(); ++k) {
        real* gx = c.grad(k);
        if (!gx) continue;
        const std::size_t b = block[k];
        for (std::size_t o = 0, n = shape_only() ? 0 : outer; o < n; ++o) {
          real* dst = gx + o * b;
          const real* src = pg + o * row + first[k];
          for (std::size_t j = 0; j < b; ++j) dst[j] += src[j];
        }
      }
    });
  }
  return out;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  const char* op = "broadcast_to";
  detail::require_defined(x, op, "x");
  const Shape& xs = x.shape();
  bool ok = xs.size() <= shape.size();
  for (std::size_t k = 0; ok && k < xs.size(); ++k) {
    const std::size_t dx = xs[xs.size() - 1 - k], ds = shape[shape.size() - 1 - k];
    ok = dx == ds || dx == 1;
  }
  detail::require(ok, op, "cannot broadcast " + shape_str(xs) + " to " + shape_str(shape));
  const Shape bs = detail::broadcast_strides(xs, shape);
  const Walk w = make_walk(shape, std::vector<std::size_t>(bs.begin(), bs.end()));
  Tensor out = detail::empty(shape);
  {
    const real* px = x.data();
    real* po = out.mutable_data();
    for_each_run(w, [&](std::size_t o, std::size_t s, std::size_t len, std::size_t st) {
      if (st == 0)
        std::fill(po + o, po + o + len, px[s]);
      else if (st == 1)
        std::copy(px + s, px + s + len, po + o);
      else
        for (std::size_t j = 0; j < len; ++j) po[o + j] = px[s + j * st];
    });
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    // dx[s] = sum of g over every output element that read s.
    tape.record(op, out, {x}, {}, [w](const BackwardCtx& c) {
      real* gx = c.grad(0);
      const real* pg = c.grad_out().data();
      for_each_run(w, [&](std::size_t o, std::size_t s, std::size_t len, std::size_t st) {
        if (st == 0) {
          real acc = 0;
          for (std::size_t j = 0; j < len; ++j) acc += pg[o + j];
          gx[s] += acc;
        } else {
          for (std::size_t j = 0; j < len; ++j) gx[s + j * st] += pg[o + j];
        }
      });
    });
  }
  return out;
}

}  // namespace pelab
