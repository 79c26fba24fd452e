// gru and lstm: forward and backward (BPTT) side by side. Internally everything is time-major
// (T, B, ...), so that each step's rows are contiguous for its GEMM and the weight gradients of all
// steps are one GEMM each; x is transposed once on the way in, dx once on the way out.
#include "core/ops/recurrent.hpp"

#include <cmath>
#include <type_traits>
#include <utility>

#include "core/blas.hpp"
#include "core/ops/common.hpp"
#include "core/ops/fast_math.hpp"

namespace pelab {
namespace {

struct RnnDims {
  std::size_t B = 0, T = 0, I = 0, H = 0, G = 0;  // G = gates * H
};

RnnDims check_args(const char* op, std::size_t gates, const Tensor& x, const Tensor& h0, const Tensor& c0,
                   const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  detail::require_defined(x, op, "x");
  detail::require_defined(w_ih, op, "w_ih");
  detail::require_defined(w_hh, op, "w_hh");
  detail::require(x.ndim() == 3, op, "x must be (B, T, I), got " + shape_str(x.shape()));
  detail::require(w_hh.ndim() == 2 && w_hh.size(0) == gates * w_hh.size(1), op,
                  "w_hh must be (" + std::to_string(gates) + "H, H), got " + shape_str(w_hh.shape()));
  RnnDims d;
  d.B = x.size(0), d.T = x.size(1), d.I = x.size(2), d.H = w_hh.size(1), d.G = gates * d.H;
  detail::require(d.B > 0 && d.T > 0 && d.I > 0 && d.H > 0, op,
                  "empty sizes: x " + shape_str(x.shape()) + ", w_hh " + shape_str(w_hh.shape()));
  detail::require(w_ih.shape() == Shape{d.G, d.I}, op,
                  "w_ih " + shape_str(w_ih.shape()) + " does not match x " + shape_str(x.shape()) + " and w_hh " +
                      shape_str(w_hh.shape()) + " (expected " + shape_str(Shape{d.G, d.I}) + ")");
  // Optional arguments: undefined, or of exactly this shape.
  auto optional = [&](const Tensor& t, const char* name, const Shape& want) {
    if (t.defined() && t.shape() != want)
      detail::require(false, op, std::string(name) + " " + shape_str(t.shape()) + " must be " + shape_str(want));
  };
  optional(b_ih, "b_ih", Shape{d.G});
  optional(b_hh, "b_hh", Shape{d.G});
  optional(h0, "h0", Shape{d.B, d.H});
  optional(c0, "c0", Shape{d.B, d.H});
  return d;
}

// The gates' sigmoid and tanh from e^(-|v|) only (no overflow), through fast_math's vectorizable exp
// in float; selects, not branches, so the gate loops vectorize. The double build (gradient checks)
// uses libm. tests/core_f32/test_recurrent_f32.cpp compares the two.
inline real sigmoid(real v) {
  const real e = detail::exp_nonpos(-std::abs(v));
  const real s = real(1) / (real(1) + e);  // sigmoid(|v|)
  return v >= 0 ? s : e * s;
}
inline real tanh_gate(real v) {
  if constexpr (std::is_same_v<real, double>) {
    return std::tanh(v);
  } else {
    const real a = std::abs(v), a2 = a * a;
    const real e = detail::exp_nonpos(real(-2) * a);
    const real big = (real(1) - e) / (real(1) + e);
    // Below 0.25, 1 - e would cancel: tanh's series to a^9 (truncation < 3e-9 there).
    const real small =
        a * (real(1) + a2 * (real(-1.0 / 3) + a2 * (real(2.0 / 15) + a2 * (real(-17.0 / 315) + a2 * real(62.0 / 2835)))));
    const real t = a < real(0.25) ? small : big;  // tanh(|v|)
    return v >= 0 ? t : -t;
  }
}

// x (B, T, I) -> (T, B, I)
Array time_major(const Tensor& x, const RnnDims& d) {
  Array out(Shape{d.T, d.B, d.I});
  const real* px = x.data();
  real* po = out.data();
  for (std::size_t b = 0, nb = shape_only() ? 0 : d.B; b < nb; ++b)  // core/shape_only.hpp: no kernels
    for (std::size_t t = 0; t < d.T; ++t) {
      const real* src = px + (b * d.T + t) * d.I;
      std::copy(src, src + d.I, po + (t * d.B + b) * d.I);
    }
  return out;
}

// rows (n, G) = bias on every row, or zeros; then the GEMM accumulates onto it.
void fill_rows(real* rows, std::size_t n, std::size_t G, const Tensor& bias) {
  if (shape_only()) return;
  if (!bias.defined()) {
    std::fill(rows, rows + n * G, real(0));
    return;
  }
  const real* pb = bias.data();
  for (std::size_t r = 0; r < n; ++r) std::copy(pb, pb + G, rows + r * G);
}

// Every step's input projection at once: (T*B, G) = x_tm w_ih^T + b_ih.
Array input_projection(const Array& x_tm, const Tensor& w_ih, const Tensor& b_ih, const RnnDims& d) {
  Array gi(Shape{d.T * d.B, d.G});
  fill_rows(gi.data(), d.T * d.B, d.G, b_ih);
  blas::gemm(false, true, d.T * d.B, d.G, d.I, 1, x_tm.data(), d.I, w_ih.data(), d.I, 1, gi.data(), d.G);
  return gi;
}

// hs[0] = h0 or zeros (a (B, H) block at the start of a time-major buffer).
void initial_state(real* dst, const Tensor& h0, const RnnDims& d) {
  if (shape_only()) return;
  if (h0.defined()) std::copy(h0.data(), h0.data() + d.B * d.H, dst);
  else std::fill(dst, dst + d.B * d.H, real(0));
}

void add_column_sums(real* gb, const real* rows, std::size_t n, std::size_t G) {
  for (std::size_t r = 0, m = shape_only() ? 0 : n; r < m; ++r)
    for (std::size_t j = 0; j < G; ++j) gb[j] += rows[r * G + j];
}

// The gradients of x, w_ih and b_ih from the input-side gate gradients dgi (T*B, G), each one GEMM.
void input_side_grads(const RnnDims& d, const real* dgi, const Array& x_tm, const real* w_ih, real* gx, real* gw,
                      real* gb) {
  if (gx) {  // dx_tm (T*B, I) = dgi w_ih, scattered back to batch-first
    Array dx(Shape{d.T * d.B, d.I});
    blas::gemm(false, false, d.T * d.B, d.I, d.G, 1, dgi, d.G, w_ih, d.I, 0, dx.data(), d.I);
    const real* pdx = dx.data();
    for (std::size_t t = 0, nt = shape_only() ? 0 : d.T; t < nt; ++t)
      for (std::size_t b = 0; b < d.B; ++b) {
        const real* src = pdx + (t * d.B + b) * d.I;
        real* dst = gx + (b * d.T + t) * d.I;
        for (std::size_t k = 0; k < d.I; ++k) dst[k] += src[k];
      }
  }
  if (gw) blas::gemm(true, false, d.G, d.I, d.T * d.B, 1, dgi, d.G, x_tm.data(), d.I, 1, gw, d.I);
  if (gb) add_column_sums(gb, dgi, d.T * d.B, d.G);
}

// The gradients of w_hh and b_hh from the recurrent-side gate gradients dgh (T*B, G) and the states
// h_{t-1} (hs[0..T-1], time-major).
void recurrent_side_grads(const RnnDims& d, const real* dgh, const real* hs, real* gw, real* gb) {
  if (gw) blas::gemm(true, false, d.G, d.H, d.T * d.B, 1, dgh, d.G, hs, d.H, 1, gw, d.H);
  if (gb) add_column_sums(gb, dgh, d.T * d.B, d.G);
}

// One row (b) of one step, each a loop over the H units on restrict pointers so that it vectorizes.
// Gate layout within a row of G: [r | z | n] (GRU), [i | f | g | o] (LSTM).
void gru_forward_row(std::size_t H, const real* __restrict xi, const real* __restrict hh, const real* __restrict hp,
                     real* __restrict act, real* __restrict ghn, real* __restrict h_out, real* __restrict y) {
  for (std::size_t j = 0; j < H; ++j) {
    const real r = sigmoid(xi[j] + hh[j]);
    const real z = sigmoid(xi[H + j] + hh[H + j]);
    const real n = tanh_gate(xi[2 * H + j] + r * hh[2 * H + j]);
    const real h = (real(1) - z) * n + z * hp[j];
    act[j] = r, act[H + j] = z, act[2 * H + j] = n;
    ghn[j] = hh[2 * H + j];
    h_out[j] = h;
    y[j] = h;
  }
}

// dh: dL/dh_t (from later steps) + g: dL/dy_t -> the gate gradients on the input side (di) and the
// recurrent side (dr: the n gate's is r times di's), and dh_prev = dL/dh_{t-1} through z alone.
void gru_backward_row(std::size_t H, const real* __restrict dh, const real* __restrict g, const real* __restrict act,
                      const real* __restrict ghn, const real* __restrict hp, real* __restrict di, real* __restrict dr,
                      real* __restrict dh_prev) {
  for (std::size_t j = 0; j < H; ++j) {
    const real dhv = dh[j] + g[j];
    const real r = act[j], z = act[H + j], n = act[2 * H + j];
    const real dn = dhv * (real(1) - z) * (real(1) - n * n);  // through tanh
    const real dz = dhv * (hp[j] - n) * z * (real(1) - z);
    const real dr_pre = dn * ghn[j] * r * (real(1) - r);
    di[j] = dr_pre, di[H + j] = dz, di[2 * H + j] = dn;
    dr[j] = dr_pre, dr[H + j] = dz, dr[2 * H + j] = dn * r;
    dh_prev[j] = dhv * z;
  }
}

void lstm_forward_row(std::size_t H, const real* __restrict xi, const real* __restrict hh, const real* __restrict cp,
                      real* __restrict act, real* __restrict c_out, real* __restrict h_out, real* __restrict y) {
  for (std::size_t j = 0; j < H; ++j) {
    const real i = sigmoid(xi[j] + hh[j]);
    const real f = sigmoid(xi[H + j] + hh[H + j]);
    const real gg = tanh_gate(xi[2 * H + j] + hh[2 * H + j]);
    const real o = sigmoid(xi[3 * H + j] + hh[3 * H + j]);
    const real cv = f * cp[j] + i * gg;
    const real h = o * tanh_gate(cv);
    act[j] = i, act[H + j] = f, act[2 * H + j] = gg, act[3 * H + j] = o;
    c_out[j] = cv;
    h_out[j] = h;
    y[j] = h;
  }
}

// dh, g as for the GRU; dc: dL/dc_t from later steps, turned into dL/dc_{t-1} in place.
void lstm_backward_row(std::size_t H, const real* __restrict dh, const real* __restrict g, const real* __restrict act,
                       const real* __restrict cp, const real* __restrict cn, real* __restrict dc,
                       real* __restrict dg) {
  for (std::size_t j = 0; j < H; ++j) {
    const real dhv = dh[j] + g[j];
    const real i = act[j], f = act[H + j], gg = act[2 * H + j], o = act[3 * H + j];
    const real tc = tanh_gate(cn[j]);
    const real dcv = dc[j] + dhv * o * (real(1) - tc * tc);
    dg[j] = dcv * gg * i * (real(1) - i);
    dg[H + j] = dcv * cp[j] * f * (real(1) - f);
    dg[2 * H + j] = dcv * i * (real(1) - gg * gg);
    dg[3 * H + j] = dhv * tc * o * (real(1) - o);
    dc[j] = dcv * f;
  }
}

}  // namespace

Tensor gru(const Tensor& x, const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
           const Tensor& b_hh) {
  const char* op = "gru";
  const RnnDims d = check_args(op, 3, x, h0, Tensor(), w_ih, w_hh, b_ih, b_hh);
  const std::size_t B = d.B, T = d.T, H = d.H, G = d.G;

  Array x_tm = time_major(x, d);
  const Array gi = input_projection(x_tm, w_ih, b_ih, d);  // (T*B, 3H)
  Array hs(Shape{T + 1, B, H});                            // h_{t-1} at t: hs[0] = h0
  Array act(Shape{T, B, G});                               // r, z, n of each step
  Array ghn(Shape{T, B, H});                               // W_hn h + b_hn of each step (dr reads it)
  Array gh(Shape{B, G});                                   // this step's recurrent projection
  Tensor out = detail::empty(Shape{B, T, H});
  {
    initial_state(hs.data(), h0, d);
    const real* pwhh = w_hh.data();
    real* po = out.mutable_data();
    for (std::size_t t = 0, nt = shape_only() ? 0 : T; t < nt; ++t) {
      const real* hp = hs.data() + t * B * H;
      real* hn = hs.data() + (t + 1) * B * H;
      fill_rows(gh.data(), B, G, b_hh);
      blas::gemm(false, true, B, G, H, 1, hp, H, pwhh, H, 1, gh.data(), G);
      for (std::size_t b = 0; b < B; ++b)
        gru_forward_row(H, gi.data() + (t * B + b) * G, gh.data() + b * G, hp + b * H, act.data() + (t * B + b) * G,
                        ghn.data() + (t * B + b) * H, hn + b * H, po + (b * T + t) * H);
    }
  }

  Tape& tape = Tape::current();
  if (tape.should_record({&x, &h0, &w_ih, &w_hh, &b_ih, &b_hh})) {
    // dx reads w_ih, dw_ih reads x (its time-major copy, kept privately); the BPTT of every gradient
    // reads w_hh. h0 lives on in hs[0]; the biases' values are never read.
    const Tensor save_w_ih = x.requires_grad() ? w_ih : Tensor();
    if (!w_ih.requires_grad()) x_tm = Array();
    auto backward = [d, x_tm = std::move(x_tm), hs = std::move(hs), act = std::move(act),
                     ghn = std::move(ghn)](const BackwardCtx& c) {
      const std::size_t B = d.B, T = d.T, H = d.H, G = d.G;
      const real* g = c.grad_out().data();  // (B, T, H)
      const real* pwhh = c.saved(1);
      Array dgi(Shape{T * B, G}), dgh(Shape{T * B, G}), dh_a(Shape{B, H}), dh_b(Shape{B, H});
      real* dh = dh_a.data();       // dL/dh_t from later steps
      real* dh_prev = dh_b.data();  // dL/dh_{t-1}, being built
      if (!shape_only()) std::fill(dh, dh + B * H, real(0));
      for (std::size_t t = shape_only() ? 0 : T; t-- > 0;) {
        const real* hp = hs.data() + t * B * H;
        real* gi_t = dgi.data() + t * B * G;
        real* gh_t = dgh.data() + t * B * G;
        for (std::size_t b = 0; b < B; ++b)
          gru_backward_row(H, dh + b * H, g + (b * T + t) * H, act.data() + (t * B + b) * G,
                           ghn.data() + (t * B + b) * H, hp + b * H, gi_t + b * G, gh_t + b * G, dh_prev + b * H);
        // dh_{t-1} += dgh_t w_hh (skipped for h0 when nobody needs its gradient)
        if (t > 0 || c.needs_grad(1)) blas::gemm(false, false, B, H, G, 1, gh_t, G, pwhh, H, 1, dh_prev, H);
        std::swap(dh, dh_prev);
      }
      if (real* gh0 = c.grad(1))
        for (std::size_t i = 0, n = shape_only() ? 0 : B * H; i < n; ++i) gh0[i] += dh[i];
      input_side_grads(d, dgi.data(), x_tm, c.saved(0), c.grad(0), c.grad(2), c.grad(4));
      recurrent_side_grads(d, dgh.data(), hs.data(), c.grad(3), c.grad(5));
    };
    tape.record(op, out, {x, h0, w_ih, w_hh, b_ih, b_hh}, {save_w_ih, w_hh}, std::move(backward));
  }
  return out;
}

Tensor lstm(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
            const Tensor& b_ih, const Tensor& b_hh) {
  const char* op = "lstm";
  const RnnDims d = check_args(op, 4, x, h0, c0, w_ih, w_hh, b_ih, b_hh);
  const std::size_t B = d.B, T = d.T, H = d.H, G = d.G;

  Array x_tm = time_major(x, d);
  const Array gi = input_projection(x_tm, w_ih, b_ih, d);  // (T*B, 4H)
  Array hs(Shape{T + 1, B, H}), cs(Shape{T + 1, B, H});     // h_{t-1}, c_{t-1} at t: [0] = h0, c0
  Array act(Shape{T, B, G});                               // i, f, g, o of each step
  Array gh(Shape{B, G});
  Tensor out = detail::empty(Shape{B, T, H});
  {
    initial_state(hs.data(), h0, d);
    initial_state(cs.data(), c0, d);
    const real* pwhh = w_hh.data();
    real* po = out.mutable_data();
    for (std::size_t t = 0, nt = shape_only() ? 0 : T; t < nt; ++t) {
      const real* hp = hs.data() + t * B * H;
      const real* cp = cs.data() + t * B * H;
      real* hn = hs.data() + (t + 1) * B * H;
      real* cn = cs.data() + (t + 1) * B * H;
      fill_rows(gh.data(), B, G, b_hh);
      blas::gemm(false, true, B, G, H, 1, hp, H, pwhh, H, 1, gh.data(), G);
      for (std::size_t b = 0; b < B; ++b)
        lstm_forward_row(H, gi.data() + (t * B + b) * G, gh.data() + b * G, cp + b * H, act.data() + (t * B + b) * G,
                         cn + b * H, hn + b * H, po + (b * T + t) * H);
    }
  }

  Tape& tape = Tape::current();
  if (tape.should_record({&x, &h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh})) {
    // As gru: w_ih for dx, x (privately, time-major) for dw_ih, w_hh for the BPTT; h0 and c0 live on
    // in hs[0] and cs[0].
    const Tensor save_w_ih = x.requires_grad() ? w_ih : Tensor();
    if (!w_ih.requires_grad()) x_tm = Array();
    auto backward = [d, x_tm = std::move(x_tm), hs = std::move(hs), cs = std::move(cs),
                     act = std::move(act)](const BackwardCtx& c) {
      const std::size_t B = d.B, T = d.T, H = d.H, G = d.G;
      const real* g = c.grad_out().data();  // (B, T, H)
      const real* pwhh = c.saved(1);
      // The input and recurrent projections get the same gate gradients: one buffer serves both.
      Array dgate(Shape{T * B, G}), dh_a(Shape{B, H}), dh_b(Shape{B, H}), dc_a(Shape{B, H});
      real* dh = dh_a.data();
      real* dh_prev = dh_b.data();
      real* dc = dc_a.data();  // dL/dc_t, turned into dL/dc_{t-1} in place
      if (!shape_only()) std::fill(dh, dh + B * H, real(0));
      if (!shape_only()) std::fill(dc, dc + B * H, real(0));
      for (std::size_t t = shape_only() ? 0 : T; t-- > 0;) {
        const real* cp = cs.data() + t * B * H;
        const real* cn = cs.data() + (t + 1) * B * H;
        real* dg_t = dgate.data() + t * B * G;
        for (std::size_t b = 0; b < B; ++b)
          lstm_backward_row(H, dh + b * H, g + (b * T + t) * H, act.data() + (t * B + b) * G, cp + b * H, cn + b * H,
                            dc + b * H, dg_t + b * G);
        if (t > 0 || c.needs_grad(1)) blas::gemm(false, false, B, H, G, 1, dg_t, G, pwhh, H, 0, dh_prev, H);
        std::swap(dh, dh_prev);
      }
      if (real* gh0 = c.grad(1))
        for (std::size_t i = 0, n = shape_only() ? 0 : B * H; i < n; ++i) gh0[i] += dh[i];
      if (real* gc0 = c.grad(2))
        for (std::size_t i = 0, n = shape_only() ? 0 : B * H; i < n; ++i) gc0[i] += dc[i];
      input_side_grads(d, dgate.data(), x_tm, c.saved(0), c.grad(0), c.grad(3), c.grad(5));
      recurrent_side_grads(d, dgate.data(), hs.data(), c.grad(4), c.grad(6));
    };
    tape.record(op, out, {x, h0, c0, w_ih, w_hh, b_ih, b_hh}, {save_w_ih, w_hh}, std::move(backward));
  }
  return out;
}

}  // namespace pelab
