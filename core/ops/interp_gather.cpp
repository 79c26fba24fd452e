// interp_gather: forward and backward side by side; backward recomputes the indices from p.
#include "core/ops/interp_gather.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ops/common.hpp"

namespace pelab {

namespace {

// Where p falls among P points: the two neighbours and the weight of the upper one. `inside` is
// false where p was clamped (its gradient is 0); nan p is reported as nan.
struct Lerp {
  std::size_t i0, i1;
  real f;
  bool inside, nan;
};

inline Lerp locate(real p, std::size_t P) {
  const real top = real(P - 1);
  if (p != p) return {0, 0, 0, false, true};
  const bool inside = p >= 0 && p <= top;
  const real pc = p < 0 ? real(0) : p > top ? top : p;
  const std::size_t i0 = static_cast<std::size_t>(std::floor(pc));
  return {i0, i0 + 1 < P ? i0 + 1 : i0, pc - real(i0), inside, false};
}

}  // namespace

Tensor interp_gather(const Tensor& z, const Tensor& p) {
  const char* op = "interp_gather";
  detail::require_defined(z, op, "z");
  detail::require_defined(p, op, "p");
  const Shape &zs = z.shape(), &ps = p.shape();
  const std::string shapes = " (z " + shape_str(zs) + ", p " + shape_str(ps) + ")";
  detail::require(zs.size() >= 1 && zs.size() == ps.size() && std::equal(zs.begin(), zs.end() - 1, ps.begin()), op,
                  "z (..., P) and p (..., N) need the same leading dims" + shapes);
  const std::size_t P = zs.back(), N = ps.back();
  detail::require(P > 0, op, "z has no points to interpolate between" + shapes);
  std::size_t rows = 1;  // the leading dims, flattened
  for (std::size_t i = 0; i + 1 < zs.size(); ++i) rows *= zs[i];
  Tensor out = detail::empty(ps);
  {
    const real *pz = z.data(), *pp = p.data();
    real* po = out.mutable_data();
    for (std::size_t r = 0, m = shape_only() ? 0 : rows; r < m; ++r) {  // core/shape_only.hpp
      const real* zr = pz + r * P;
      for (std::size_t n = r * N; n < (r + 1) * N; ++n) {
        const Lerp l = locate(pp[n], P);
        po[n] = l.nan ? std::numeric_limits<real>::quiet_NaN() : (real(1) - l.f) * zr[l.i0] + l.f * zr[l.i1];
      }
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&z, &p})) {
    // Both gradients read p (the indices); only p's reads z.
    const Tensor save_z = p.requires_grad() ? z : Tensor();
    tape.record(op, out, {z, p}, {save_z, p}, [rows, P, N](const BackwardCtx& c) {
      const real *pz = c.saved(0), *pp = c.saved(1), *g = c.grad_out().data();
      real* gz = c.grad(0);
      real* gp = c.grad(1);
      for (std::size_t r = 0, m = shape_only() ? 0 : rows; r < m; ++r)
        for (std::size_t n = r * N; n < (r + 1) * N; ++n) {
          const Lerp l = locate(pp[n], P);
          if (gz && !l.nan) {
            gz[r * P + l.i0] += (real(1) - l.f) * g[n];
            gz[r * P + l.i1] += l.f * g[n];
          }
          if (gp)
            gp[n] += l.nan ? std::numeric_limits<real>::quiet_NaN()
                           : l.inside ? (pz[r * P + l.i1] - pz[r * P + l.i0]) * g[n] : real(0);
        }
    });
  }
  return out;
}

}  // namespace pelab
