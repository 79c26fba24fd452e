// Stick-breaking row kernels: forward and backward side by side (formulas in stick_breaking.hpp).
#include "core/ops/stick_breaking.hpp"

#include <algorithm>
#include <cmath>

#include "core/ops/kernels.hpp"

namespace pelab::detail {

namespace {

// softplus(x) = log(1 + e^x) without overflow; log sigmoid(x) = -softplus(-x).
inline real softplus(real x) { return std::max(x, real(0)) + std::log1p(std::exp(-std::abs(x))); }
inline real sigmoid(real x) {
  const real e = std::exp(-std::abs(x));  // in (0, 1]
  return x >= 0 ? real(1) / (real(1) + e) : e / (real(1) + e);
}

}  // namespace

StickRow stick_row(std::size_t i, std::size_t off, bool attend_current, std::size_t window, std::size_t chunk) {
  const std::size_t end = i + off + (attend_current ? 1 : 0);
  return {std::min(end, kernels::first_key(end, window, chunk, i + off)), end};
}

void stick_breaking_rows(real* S, const real* bias, real* Z, std::size_t r0, std::size_t r1, std::size_t Tk,
                         std::size_t off, bool attend_current, std::size_t window, std::size_t chunk) {
  for (std::size_t i = r0; i < r1; ++i) {
    real* s = S + i * Tk;
    const StickRow row = stick_row(i, off, attend_current, window, chunk);
    if (bias)
      for (std::size_t j = row.first; j < row.end; ++j) s[j] += bias[i * Tk + j];
    if (Z) std::copy(s, s + Tk, Z + i * Tk);
    real rest = 0;  // log of the stick left by the keys nearer the query: -sum of softplus(z_k)
    for (std::size_t j = row.end; j-- > row.first;) {
      const real z = s[j];
      s[j] = std::exp(rest - softplus(-z));
      rest -= softplus(z);
    }
    std::fill(s, s + row.first, real(0));
    std::fill(s + row.end, s + Tk, real(0));
  }
}

void stick_breaking_backward_rows(real* dS, const real* A, const real* Z, std::size_t r0, std::size_t r1,
                                  std::size_t Tk, std::size_t off, bool attend_current, std::size_t window,
                                  std::size_t chunk) {
  for (std::size_t i = r0; i < r1; ++i) {
    real* g = dS + i * Tk;
    const real* a = A + i * Tk;
    const real* z = Z + i * Tk;
    const StickRow row = stick_row(i, off, attend_current, window, chunk);
    real farther = 0;  // sum of G_k over the keys k < j
    for (std::size_t j = row.first; j < row.end; ++j) {
      const real G = g[j] * a[j], sig = sigmoid(z[j]);
      g[j] = G * (real(1) - sig) - sig * farther;
      farther += G;
    }
    std::fill(g, g + row.first, real(0));
    std::fill(g + row.end, g + Tk, real(0));
  }
}

}  // namespace pelab::detail
