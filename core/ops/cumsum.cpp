// cumsum: forward and backward are the same scan (backward runs it the other way and accumulates).
#include "core/ops/cumsum.hpp"

#include "core/ops/common.hpp"

namespace pelab {

namespace {

// x viewed as (outer, n, inner), scanned along n (from the end with reverse). run (inner) holds the
// running sums, so every step is a contiguous inner loop. accumulate: out += scan instead of =.
void scan(const real* x, real* out, std::size_t outer, std::size_t n, std::size_t inner, bool reverse,
          bool accumulate, real* run) {
  for (std::size_t o = 0; o < outer; ++o) {
    std::fill(run, run + inner, real(0));
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t t = reverse ? n - 1 - s : s;
      const real* xr = x + (o * n + t) * inner;
      real* yr = out + (o * n + t) * inner;
      for (std::size_t c = 0; c < inner; ++c) {
        run[c] += xr[c];
        yr[c] = accumulate ? yr[c] + run[c] : run[c];
      }
    }
  }
}

}  // namespace

Tensor cumsum(const Tensor& x, int axis, bool reverse) {
  const char* op = "cumsum";
  detail::require_defined(x, op, "x");
  const Shape& s = x.shape();
  const std::size_t a = detail::norm_axis(axis, s.size(), op);
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < a; ++i) outer *= s[i];
  for (std::size_t i = a + 1; i < s.size(); ++i) inner *= s[i];
  const std::size_t n = s[a];
  Tensor out = detail::empty(s);
  Array run(Shape{inner});
  if (!shape_only()) scan(x.data(), out.mutable_data(), outer, n, inner, reverse, false, run.data());
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [outer, n, inner, reverse](const BackwardCtx& c) {
      Array run(Shape{inner});
      real* g = c.grad(0);
      if (!shape_only()) scan(c.grad_out().data(), g, outer, n, inner, !reverse, true, run.data());
    });
  }
  return out;
}

}  // namespace pelab
