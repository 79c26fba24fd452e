// causal_depthwise_conv: forward and backward side by side. Rows (b, t) of x are C contiguous channels,
// so every loop runs over the channels innermost with the taps laid out (K, C).
#include "core/ops/causal_conv.hpp"

#include "core/ops/common.hpp"

namespace pelab {

namespace {

constexpr const char* kOp = "causal_depthwise_conv";

struct ConvDims {
  std::size_t B, T, C, K;
};

ConvDims conv_dims(const Tensor& x, const Tensor& w) {
  detail::require_defined(x, kOp, "x");
  detail::require_defined(w, kOp, "w");
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  detail::require(xs.size() == 3, kOp, "x must be (B, T, C), got " + shape_str(xs));
  const bool conv1d = ws.size() == 3 && ws[1] == 1;
  detail::require((conv1d || ws.size() == 2) && ws[0] == xs[2] && ws.back() > 0, kOp,
                  "w must be (C, 1, K) or (C, K) with C = " + std::to_string(xs[2]) + " and K >= 1, got " +
                      shape_str(ws));
  return {xs[0], xs[1], xs[2], ws.back()};
}

// w (C, K) -> (K, C): tap s of every channel contiguous.
std::vector<real> taps_by_row(const real* w, std::size_t C, std::size_t K) {
  std::vector<real> wt(K * C);
  for (std::size_t c = 0, n = shape_only() ? 0 : C; c < n; ++c)  // core/shape_only.hpp: w has no values
    for (std::size_t s = 0; s < K; ++s) wt[s * C + c] = w[c * K + s];
  return wt;
}

// f(r, t) for every row r = b T + t of (B, T, C), rows split over threads (each row is written by one).
template <class F>
void for_each_row(const ConvDims& d, F&& f) {
  detail::for_rows(d.B * d.T, d.C * d.K, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) f(r, r % d.T);
  });
}

// out (B, T, C) = the taps of x in order s = 0..K-1. A tap reaching before t = 0 multiplies 0 (kept,
// not skipped: 0 * w is -0 for a negative w, as the shifted copies gave).
void conv_forward(const ConvDims& d, const real* x, const real* wt, real* out) {
  const std::size_t T = d.T, C = d.C, K = d.K;
  for_each_row(d, [&](std::size_t r, std::size_t t) {
    real* o = out + r * C;
    bool first = true;
    for (std::size_t s = 0; s < K; ++s) {
      const std::size_t lag = K - 1 - s;
      if (lag >= T) continue;
      const real* ws = wt + s * C;
      if (t >= lag) {
        const real* xr = x + (r - lag) * C;
        for (std::size_t c = 0; c < C; ++c) o[c] = first ? xr[c] * ws[c] : o[c] + xr[c] * ws[c];
      } else {
        for (std::size_t c = 0; c < C; ++c) o[c] = first ? real(0) * ws[c] : o[c] + real(0) * ws[c];
      }
      first = false;
    }
  });
}

// dx (B, T, C) += g shifted back by each tap's lag times the tap, nearest tap (lag 0) first.
void conv_backward_x(const ConvDims& d, const real* g, const real* wt, real* dx) {
  const std::size_t T = d.T, C = d.C, K = d.K;
  for_each_row(d, [&](std::size_t r, std::size_t t) {
    real* dr = dx + r * C;
    for (std::size_t lag = 0; lag < K && t + lag < T; ++lag) {
      const real* gr = g + (r + lag) * C;
      const real* ws = wt + (K - 1 - lag) * C;
      for (std::size_t c = 0; c < C; ++c) dr[c] += gr[c] * ws[c];
    }
  });
}

// dw[c, s] += sum over (b, t) in row order of g[b, t, c] x[b, t - lag, c]; the rows before the
// sequence start add 0 and are skipped (a sum from +0 never turns -0). Channels split over threads.
void conv_backward_w(const ConvDims& d, const real* g, const real* x, real* dw) {
  const std::size_t B = d.B, T = d.T, C = d.C, K = d.K;
  detail::for_cols(B * T * K, C, [&](std::size_t c0, std::size_t c1) {
    std::vector<real> acc(c1 - c0);
    for (std::size_t s = 0; s < K; ++s) {
      const std::size_t lag = K - 1 - s;
      if (lag >= T) continue;
      std::fill(acc.begin(), acc.end(), real(0));
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = lag; t < T; ++t) {
          const real* gr = g + (b * T + t) * C;
          const real* xr = x + (b * T + t - lag) * C;
          for (std::size_t c = c0; c < c1; ++c) acc[c - c0] += gr[c] * xr[c];
        }
      for (std::size_t c = c0; c < c1; ++c) dw[c * K + s] += acc[c - c0];
    }
  });
}

}  // namespace

Tensor causal_depthwise_conv(const Tensor& x, const Tensor& w) {
  const ConvDims d = conv_dims(x, w);
  Tensor out = detail::empty(x.shape());
  conv_forward(d, x.data(), taps_by_row(w.data(), d.C, d.K).data(), out.mutable_data());
  Tape& tape = Tape::current();
  if (tape.should_record({&x, &w})) {
    // dx reads w, dw reads x.
    tape.record(kOp, out, {x, w}, {w.requires_grad() ? x : Tensor(), x.requires_grad() ? w : Tensor()},
                [d](const BackwardCtx& c) {
                  const real* g = c.grad_out().data();
                  if (real* dx = c.grad(0)) conv_backward_x(d, g, taps_by_row(c.saved(1), d.C, d.K).data(), dx);
                  if (real* dw = c.grad(1)) conv_backward_w(d, g, c.saved(0), dw);
                });
  }
  return out;
}

}  // namespace pelab
