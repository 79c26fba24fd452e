// The hot loops, each compiled per instruction set (PELAB_HOT). Reductions use a fixed set of
// independent accumulators (8 lanes, combined in a fixed order): the compiler maps them onto vector
// registers of any width without changing which numbers are added in which order.
#include "core/ops/kernels.hpp"

#include <cmath>
#include <limits>

#include "core/ops/fast_math.hpp"
#include "core/simd.hpp"

namespace pelab::kernels {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

// Sum of x[0, n): 8 accumulators over blocks of 8, then the tail, then the accumulators in order.
template <class T>
inline T row_sum(const T* x, std::size_t n) {
  T acc[8] = {};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) acc[u] += x[j + u];
  T s = 0;
  for (; j < n; ++j) s += x[j];
  for (int u = 0; u < 8; ++u) s += acc[u];
  return s;
}

template <class T>
inline T row_dot(const T* x, const T* y, std::size_t n) {
  T acc[8] = {};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) acc[u] += x[j + u] * y[j + u];
  T s = 0;
  for (; j < n; ++j) s += x[j] * y[j];
  for (int u = 0; u < 8; ++u) s += acc[u];
  return s;
}

// max is exact, so any order gives the same value; 8 lanes let it vectorize.
template <class T>
inline T row_max(const T* x, std::size_t n) {
  T acc[8];
  for (int u = 0; u < 8; ++u) acc[u] = x[0];
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) acc[u] = x[j + u] > acc[u] ? x[j + u] : acc[u];
  T m = acc[0];
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  for (int u = 0; u < 8; ++u) m = acc[u] > m ? acc[u] : m;
  return m;
}

// Sum in double of float values and of squared deviations from mu (LayerNorm's two passes).
template <class T>
inline double sum_double(const T* x, std::size_t n) {
  double acc[8] = {};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) acc[u] += double(x[j + u]);
  double s = 0;
  for (; j < n; ++j) s += double(x[j]);
  for (int u = 0; u < 8; ++u) s += acc[u];
  return s;
}

template <class T>
inline double sum_sq_dev(const T* x, double mu, std::size_t n) {
  double acc[8] = {};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) {
      const double d = double(x[j + u]) - mu;
      acc[u] += d * d;
    }
  double s = 0;
  for (; j < n; ++j) {
    const double d = double(x[j]) - mu;
    s += d * d;
  }
  for (int u = 0; u < 8; ++u) s += acc[u];
  return s;
}

}  // namespace

PELAB_HOT
void bias_gelu_rows(real* y, const real* bias, real* d, std::size_t r0, std::size_t r1, std::size_t F) {
  for (std::size_t r = r0; r < r1; ++r) {
    real* __restrict yr = y + r * F;
    real* __restrict dr = d ? d + r * F : nullptr;
    for (std::size_t j = 0; j < F; ++j) {
      const real h = bias ? yr[j] + bias[j] : yr[j];
      const real e = detail::erf_fast(h * real(kInvSqrt2));
      yr[j] = real(0.5) * h * (real(1) + e);
      if (dr) dr[j] = real(0.5) * (real(1) + e) + h * real(kInvSqrt2Pi) * detail::exp_nonpos(real(-0.5) * h * h);
    }
  }
}

PELAB_HOT
void mul_colsum(const real* g, const real* d, real* gh, bool accumulate, real* db, std::size_t rows, std::size_t F,
                std::size_t j0, std::size_t j1) {
  for (std::size_t r = 0; r < rows; ++r) {
    const real* __restrict gr = g + r * F;
    const real* __restrict dr = d + r * F;
    real* __restrict hr = gh + r * F;
    if (db) {
      for (std::size_t j = j0; j < j1; ++j) {
        const real v = gr[j] * dr[j];
        hr[j] = accumulate ? hr[j] + v : v;
        db[j] += v;
      }
    } else {
      for (std::size_t j = j0; j < j1; ++j) {
        const real v = gr[j] * dr[j];
        hr[j] = accumulate ? hr[j] + v : v;
      }
    }
  }
}

PELAB_HOT
void mul_colsum_inplace(const real* g, real* gd, real* db, std::size_t rows, std::size_t F, std::size_t j0,
                        std::size_t j1) {
  for (std::size_t r = 0; r < rows; ++r) {
    const real* __restrict gr = g + r * F;
    real* __restrict dr = gd + r * F;
    if (db) {
      real* __restrict o = db;
      for (std::size_t j = j0; j < j1; ++j) {
        const real v = gr[j] * dr[j];
        dr[j] = v;
        o[j] += v;
      }
    } else {
      for (std::size_t j = j0; j < j1; ++j) dr[j] = gr[j] * dr[j];
    }
  }
}

PELAB_HOT
void colsum(const real* g, real* db, std::size_t rows, std::size_t F, std::size_t j0, std::size_t j1) {
  for (std::size_t r = 0; r < rows; ++r) {
    const real* __restrict gr = g + r * F;
    real* __restrict o = db;
    for (std::size_t j = j0; j < j1; ++j) o[j] += gr[j];
  }
}

PELAB_HOT
void layer_norm_rows(const real* x, const real* a, const real* b, real* h, const real* gamma, const real* beta,
                     real* y, real* mean, real* rstd, std::size_t r0, std::size_t r1, std::size_t C, real eps) {
  for (std::size_t r = r0; r < r1; ++r) {
    const real* xr;
    if (x) {
      xr = x + r * C;
    } else {  // h = a + b, then normalize h
      const real* __restrict ar = a + r * C;
      const real* __restrict br = b + r * C;
      real* __restrict hr = h + r * C;
      for (std::size_t j = 0; j < C; ++j) hr[j] = ar[j] + br[j];
      xr = hr;
    }
    real* __restrict yr = y + r * C;
    // Two passes with double accumulators: no cancellation from E[x^2] - E[x]^2.
    const double mu = sum_double(xr, C) / double(C);
    const double v = sum_sq_dev(xr, mu, C);
    const real m = static_cast<real>(mu);
    const real rs = static_cast<real>(1.0 / std::sqrt(v / double(C) + double(eps)));
    mean[r] = m;
    rstd[r] = rs;
    if (beta)
      for (std::size_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * rs * gamma[j] + beta[j];
    else
      for (std::size_t j = 0; j < C; ++j) yr[j] = (xr[j] - m) * rs * gamma[j];
  }
}

PELAB_HOT
void layer_norm_backward_rows(const real* x, const real* g, const real* gamma, const real* mean, const real* rstd,
                              real* dx, bool accumulate, real* dgamma, real* dbeta, std::size_t r0, std::size_t r1,
                              std::size_t C) {
  const real invC = real(1) / static_cast<real>(C);
  for (std::size_t r = r0; r < r1; ++r) {
    const real* __restrict xr = x ? x + r * C : nullptr;  // read for dgamma and dx only
    const real* __restrict gr = g + r * C;
    const real m = mean[r], rs = rstd[r];
    if (!dx) {
      if (dgamma)
        for (std::size_t j = 0; j < C; ++j) dgamma[j] += gr[j] * (xr[j] - m) * rs;
      if (dbeta)
        for (std::size_t j = 0; j < C; ++j) dbeta[j] += gr[j];
      continue;
    }
    // With xhat = (x - mean) * rstd and dxhat = g * gamma:
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)). One pass for the row sums, one
    // for dx and the parameter gradients.
    real sd[8] = {}, sdx[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= C; j += 8)
      for (int u = 0; u < 8; ++u) {
        const real dxh = gr[j + u] * gamma[j + u];
        sd[u] += dxh;
        sdx[u] += dxh * (xr[j + u] - m) * rs;
      }
    real s1 = 0, s2 = 0;
    for (; j < C; ++j) {
      const real dxh = gr[j] * gamma[j];
      s1 += dxh;
      s2 += dxh * (xr[j] - m) * rs;
    }
    for (int u = 0; u < 8; ++u) {
      s1 += sd[u];
      s2 += sdx[u];
    }
    s1 *= invC;
    s2 *= invC;
    real* __restrict dr = dx + r * C;
    if (dgamma && dbeta && !accumulate) {  // the usual case, one loop
      real* __restrict dga = dgamma;
      real* __restrict dbe = dbeta;
      for (std::size_t k = 0; k < C; ++k) {
        dga[k] += gr[k] * (xr[k] - m) * rs;
        dbe[k] += gr[k];
        dr[k] = rs * (gr[k] * gamma[k] - s1 - (xr[k] - m) * rs * s2);
      }
      continue;
    }
    if (dgamma)
      for (std::size_t k = 0; k < C; ++k) dgamma[k] += gr[k] * (xr[k] - m) * rs;
    if (dbeta)
      for (std::size_t k = 0; k < C; ++k) dbeta[k] += gr[k];
    if (accumulate)
      for (std::size_t k = 0; k < C; ++k) dr[k] += rs * (gr[k] * gamma[k] - s1 - (xr[k] - m) * rs * s2);
    else
      for (std::size_t k = 0; k < C; ++k) dr[k] = rs * (gr[k] * gamma[k] - s1 - (xr[k] - m) * rs * s2);
  }
}

PELAB_HOT
void layer_norm_param_cols(const real* x, const real* g, const real* mean, const real* rstd, real* dgamma,
                           real* dbeta, std::size_t rows, std::size_t C, std::size_t j0, std::size_t j1) {
  for (std::size_t r = 0; r < rows; ++r) {
    const real* __restrict xr = x ? x + r * C : nullptr;  // read for dgamma only
    const real* __restrict gr = g + r * C;
    const real m = mean[r], rs = rstd[r];
    if (dgamma)
      for (std::size_t j = j0; j < j1; ++j) dgamma[j] += gr[j] * (xr[j] - m) * rs;
    if (dbeta)
      for (std::size_t j = j0; j < j1; ++j) dbeta[j] += gr[j];
  }
}

// Rows are processed in whole groups of 16 lanes (the visible length rounded up, capped at Tk): the
// lanes past the visible keys hold -inf, whose exp is exactly 0, so every loop runs full vectors
// instead of a scalar remainder on each of the (short, causal) rows.
inline std::size_t lanes16(std::size_t n, std::size_t Tk) {
  const std::size_t m = (n + 15) / 16 * 16;
  return m < Tk ? m : Tk;
}

PELAB_HOT
void attention_softmax_rows(real* S, const real* bias, std::size_t r0, std::size_t r1, std::size_t Tk,
                            std::size_t off, bool causal, std::size_t window, std::size_t chunk, real scale) {
  const real neg_inf = -std::numeric_limits<real>::infinity();
  for (std::size_t i = r0; i < r1; ++i) {
    real* __restrict s = S + i * Tk;
    const std::size_t n = causal ? i + off + 1 : Tk, m = lanes16(n, Tk);
    // A loop of its own: in the bias's loop below, -ffp-contract=fast would fuse s * scale + b (other bits).
    if (scale != real(1))
      for (std::size_t j = 0; j < m; ++j) s[j] *= scale;
    if (bias) {
      const real* __restrict br = bias + i * Tk;
      for (std::size_t j = 0; j < m; ++j) s[j] += br[j];
    }
    for (std::size_t j = n; j < m; ++j) s[j] = neg_inf;  // masked lanes: exp gives exactly 0
    for (std::size_t j = 0, lo = first_key(n, window, chunk, i + off); j < lo; ++j) s[j] = neg_inf;  // outside the window or chunk
    const real mx = row_max(s, m);
    for (std::size_t j = 0; j < m; ++j) s[j] = detail::exp_nonpos(s[j] - mx);
    const real inv = real(1) / row_sum(s, m);
    for (std::size_t j = 0; j < m; ++j) s[j] *= inv;
    for (std::size_t j = n; j < Tk; ++j) s[j] = real(0);  // masked: exactly zero
  }
}

PELAB_HOT
void attention_softmax_backward_rows(real* dS, const real* P, std::size_t r0, std::size_t r1, std::size_t Tk,
                                     std::size_t off, bool causal) {
  for (std::size_t i = r0; i < r1; ++i) {
    real* __restrict s = dS + i * Tk;
    const real* __restrict p = P + i * Tk;
    const std::size_t n = causal ? i + off + 1 : Tk, m = lanes16(n, Tk);
    for (std::size_t j = n; j < m; ++j) s[j] = real(0);  // masked lanes (P is 0 there)
    const real dot = row_dot(s, p, m);
    for (std::size_t j = 0; j < m; ++j) s[j] = p[j] * (s[j] - dot);
    for (std::size_t j = n; j < Tk; ++j) s[j] = real(0);
  }
}

PELAB_HOT
void add(const real* a, const real* b, real* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

PELAB_HOT
void copy_or_add(const real* g, real* out, bool accumulate, std::size_t n) {
  const real* __restrict s = g;
  real* __restrict o = out;
  if (accumulate)
    for (std::size_t i = 0; i < n; ++i) o[i] += s[i];
  else
    for (std::size_t i = 0; i < n; ++i) o[i] = s[i];
}

}  // namespace pelab::kernels
