// Rotations of q and k by learned angles p * omega (GRAPE-M's commuting case, RoPE with trainable
// frequencies, 1-D ComRoPE with 2 x 2 blocks: layers/positional/grape_m.cpp), written once for the
// encoding and for the double-precision gradient check (tests/core/test_learned_rotation.cpp), hence
// header-only over core ops.
//
// exp(p omega L) for a rank-2 skew generator L = e_a e_b^T - e_b e_a^T on a canonical pair (a, b) is
// I + sin(p omega) L + (1 - cos(p omega)) L^2 (Rodrigues; Zhang et al. 2025, arXiv 2512.07805, Sec. 3.1),
// i.e. the RoPE rotation of that pair by the angle p omega; pairs are orthogonal planes, so the
// generators commute and the product over pairs is the rotation of every pair at once.
//
// Exactness: the angles p * omega are taken in double (as RoPE's tables: rotary_tables), so ids far past
// training stay accurate, and the rotation is the rotary op. The tables hold values, not a tape, so
// omega's gradient is carried by a term whose value is exactly zero: y + (p * (omega - omega_const)) * J y,
// J the quarter turn of each pair, (y1, y2) -> (-y2, y1). Its derivative in omega is p J y = dy/domega
// (d R(a) x / da = J R(a) x), in x it is 0, as the derivative of y's omega-dependence is at a fixed x;
// y's own derivative in x is the rotary op's. The term is recorded only when omega needs a gradient.
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "core/ops/elementwise.hpp"
#include "core/ops/rotary.hpp"
#include "core/ops/shape.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "core/tensor.hpp"

namespace pelab {

// Tables for ids (B, T) and angular frequencies omega (Hf, P) row-major in double, Hf = 1 (shared by the
// heads): (B, T, P), the values of rotary_tables(positions, omega); Hf = H (a spectrum per head):
// (B * H, T, P), row b * H + h for head h of row b.
inline std::shared_ptr<const RotaryTables> learned_rotary_tables(const IndexArray& positions,
                                                                 const std::vector<double>& omega, std::size_t Hf) {
  const std::size_t B = positions.shape()[0], T = positions.shape()[1], P = omega.size() / Hf;
  auto tb = std::make_shared<RotaryTables>();
  tb->cos.resize({B * Hf, T, P});
  tb->sin.resize({B * Hf, T, P});
  for (std::size_t b = 0, nb = shape_only() ? 0 : B; b < nb; ++b)  // core/shape_only.hpp: allocated, not filled
    for (std::size_t h = 0; h < Hf; ++h)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < P; ++i) {
          const double a = double(positions(b, t)) * omega[h * P + i];  // in double: exact ids far out
          const std::size_t at = ((b * Hf + h) * T + t) * P + i;
          tb->cos.data()[at] = static_cast<real>(std::cos(a));
          tb->sin.data()[at] = static_cast<real>(std::sin(a));
        }
  return tb;
}

namespace detail {
// J y for y (B, H, T, 2P): each pair (y1, y2) -> (-y2, y1), pairs as the layout makes them.
inline Array quarter_turn(const Array& y, std::size_t P, RotaryLayout layout) {
  Array out(y.shape());
  const std::size_t rows = shape_only() ? 0 : y.size() / (2 * P);  // core/shape_only.hpp: no values
  for (std::size_t r = 0; r < rows; ++r) {
    const real* a = y.data() + r * 2 * P;
    real* o = out.data() + r * 2 * P;
    for (std::size_t i = 0; i < P; ++i) {
      const std::size_t i1 = layout == RotaryLayout::half ? i : 2 * i, i2 = layout == RotaryLayout::half ? i + P : 2 * i + 1;
      o[i1] = -a[i2];
      o[i2] = a[i1];
    }
  }
  return out;
}
}  // namespace detail

// x (B, H, T, hs = 2P) rotated pairwise by the angles p_bt * omega[h or 0][i]; tables from
// learned_rotary_tables(positions, omega's values, Hf). Gradients to x (the rotary op's) and to omega.
inline Tensor learned_rotary(const Tensor& x, const IndexArray& positions, const Tensor& omega,
                             const std::shared_ptr<const RotaryTables>& tables, RotaryLayout layout) {
  const std::size_t B = x.size(0), H = x.size(1), T = x.size(2), hs = x.size(3);
  const std::size_t Hf = omega.size(0), P = omega.size(1);
  if (2 * P != hs || (Hf != 1 && Hf != H) || positions.shape()[0] != B || positions.shape()[1] != T)
    throw Error("learned_rotary: x " + shape_str(x.shape()) + ", omega " + shape_str(omega.shape()) +
                ": omega must be (1 or H, hs / 2) and the ids (B, T)");
  const Tensor y = Hf == 1 ? rotary(x, tables, layout)
                           : reshape(rotary(reshape(x, {B * H, 1, T, hs}), tables, layout), {B, H, T, hs});
  if (!Tape::current().should_record({&omega})) return y;
  Array p(Shape{B, 1, T, 1});
  for (std::size_t i = 0, n = shape_only() ? 0 : B * T; i < n; ++i)  // core/shape_only.hpp: no values
    p.data()[i] = static_cast<real>(positions.data()[i]);
  const Tensor delta = reshape(sub(omega, Tensor(array_copy(omega.value()))), {1, Hf, 1, P});  // 0, omega's gradient
  Tensor pd = mul(Tensor(std::move(p)), delta);                                      // (B, Hf, T, P)
  pd = layout == RotaryLayout::half
           ? concat({pd, pd}, 3)
           : reshape(concat({reshape(pd, {B, Hf, T, P, 1}), reshape(pd, {B, Hf, T, P, 1})}, 4), {B, Hf, T, hs});
  return add(y, mul(Tensor(detail::quarter_turn(y.value(), P, layout)), pd));  // (B, H, T, hs): y's value
}

}  // namespace pelab
