// Not xsimd::exp / xsimd::erf: 12-18% faster at equal width but different bits (they would change committed
// results), and compile-time width (SSE4.2 in the portable build); ./build/bench/bench_libraries, docs/performance.md.
// Vectorizable float versions of exp and erf for hot elementwise loops (softmax, GELU). Each keeps
// libm beside it: the double build (gradient checks) uses std::exp / std::erf, and
// tests/core_f32/test_fast_math.cpp compares the two over dense grids.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace pelab::detail {

// e^x for x <= 0 (softmax after subtracting the row max), vectorizable: a Cephes-style polynomial
// (max relative error 8.4e-8, under one float ulp) instead of a libm call per element, which was
// half the forward's time. x < -86 gives exactly 0 (no denormals reach the GEMMs); NaN stays NaN.
inline float exp_nonpos(float x) {
  std::uint32_t ux;
  std::memcpy(&ux, &x, 4);
  const std::uint32_t kLo = 0xC2AC0000u;  // bits of -86.0f; for x <= 0, larger bits = more negative
  const std::uint32_t uc = ux < kLo ? ux : kLo;
  float xc;
  std::memcpy(&xc, &uc, 4);
  const float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low mantissa bits
  const float t = xc * 1.44269504088896341f + kMagic;
  const float n = t - kMagic;                                  // round(x / ln 2)
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;  // x - n ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;  // e^r, |r| <= ln2 / 2
  // Unsigned: the same bits as two's complement, but no signed overflow (UB) for the lanes the masks
  // below discard (NaN input).
  std::uint32_t tb, pb;
  std::memcpy(&tb, &t, 4);
  std::memcpy(&pb, &p, 4);
  std::uint32_t yb = pb + (tb - 0x4B400000u) * (1u << 23);  // e^r * 2^n
  // Masks, not branches: GCC would sink the polynomial into a branch and then not vectorize it.
  const std::uint32_t keep = 0u - static_cast<std::uint32_t>(ux <= kLo);
  const std::uint32_t nan = 0u - static_cast<std::uint32_t>((ux & 0x7FFFFFFFu) > 0x7F800000u);
  yb = ((yb & keep) & ~nan) | (ux & nan);
  float y;
  std::memcpy(&y, &yb, 4);
  return y;
}
// The double build (gradient checks, reference comparisons) keeps libm's exp.
inline double exp_nonpos(double x) { return std::exp(x); }

// erf(x) as a rational function of x (odd / even polynomials, the approximation Eigen and XLA use),
// evaluated in double so it stays within ~1e-7 absolute of erf (libm's erff: ~5e-8) while
// vectorizing (4 doubles per AVX2 lane); |x| >= 4 gives +-1 (erf(4) = 1 - 1.5e-8).
inline float erf_fast(float xf) {
  const double xd = double(xf);
  const double lo = xd < -4.0 ? -4.0 : xd;
  const double x = lo > 4.0 ? 4.0 : lo;
  const double x2 = x * x;
  double p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
  p = x2 * p - 2.10102402082508e-06;
  p = x2 * p - 5.69250639462346e-05;
  p = x2 * p - 7.34990630326855e-04;
  p = x2 * p - 2.95459980854025e-03;
  p = x2 * p - 1.60960333262415e-02;
  double q = x2 * -1.45660718464996e-05 - 2.13374055278905e-04;
  q = x2 * q - 1.68282697438203e-03;
  q = x2 * q - 7.37332916720468e-03;
  q = x2 * q - 1.42647390514189e-02;
  return static_cast<float>(x * p / q);
}
inline double erf_fast(double x) { return std::erf(x); }

}  // namespace pelab::detail
