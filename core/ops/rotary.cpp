#include "core/ops/rotary.hpp"

#include <cmath>
#include <string>

#include "core/ops/common.hpp"

namespace pelab {

namespace {
std::string positions_str(const IndexArray& p) { return shape_str(Shape(p.shape().begin(), p.shape().end())); }
}  // namespace

RotaryTables rotary_tables(const IndexArray& positions, const std::vector<double>& inv_freq) {
  detail::require(positions.dimension() == 2, "rotary_tables", "positions must be (B, T), got " + positions_str(positions));
  detail::require(!inv_freq.empty(), "rotary_tables", "needs at least one frequency");
  const std::size_t B = positions.shape()[0], T = positions.shape()[1], P = inv_freq.size();
  RotaryTables tb;
  tb.cos.resize({B, T, P});
  tb.sin.resize({B, T, P});
  const std::int32_t* pp = positions.data();
  for (std::size_t bt = 0, n = shape_only() ? 0 : B * T; bt < n; ++bt)  // core/shape_only.hpp
    for (std::size_t i = 0; i < P; ++i) {
      const double a = double(pp[bt]) * inv_freq[i];  // in double: positions far past training stay accurate
      tb.cos.data()[bt * P + i] = static_cast<real>(std::cos(a));
      tb.sin.data()[bt * P + i] = static_cast<real>(std::sin(a));
    }
  return tb;
}

std::vector<double> rotary_inv_freq(std::size_t rot_dims, double base) {
  detail::require(rot_dims > 0 && rot_dims % 2 == 0, "rotary_tables",
                  "rotated dims must be even and positive, got " + std::to_string(rot_dims));
  std::vector<double> theta(rot_dims / 2);
  for (std::size_t i = 0; i < theta.size(); ++i) theta[i] = std::pow(base, -2.0 * double(i) / double(rot_dims));
  return theta;
}

RotaryTables rotary_tables(const IndexArray& positions, std::size_t rot_dims, double base) {
  detail::require(positions.dimension() == 2, "rotary_tables", "positions must be (B, T), got " + positions_str(positions));
  return rotary_tables(positions, rotary_inv_freq(rot_dims, base));
}

void scale_rotary_tables(RotaryTables& tb, const IndexArray& positions,
                         const std::function<double(std::int32_t, std::size_t)>& scale) {
  const std::size_t P = tb.n_pairs();
  detail::require(positions.dimension() == 2 && tb.cos.dimension() == 3 && tb.cos.shape()[0] == positions.shape()[0] &&
                      tb.cos.shape()[1] == positions.shape()[1],
                  "scale_rotary_tables",
                  "positions " + positions_str(positions) + " do not match the tables " + shape_str(tb.cos.shape()));
  const std::int32_t* pp = positions.data();
  for (std::size_t bt = 0, n = shape_only() ? 0 : positions.size(); bt < n; ++bt)
    for (std::size_t i = 0; i < P; ++i) {
      const double m = scale(pp[bt], i);
      tb.cos.data()[bt * P + i] = static_cast<real>(double(tb.cos.data()[bt * P + i]) * m);
      tb.sin.data()[bt * P + i] = static_cast<real>(double(tb.sin.data()[bt * P + i]) * m);
    }
}

namespace {
// Applies to every pair of one head row the map [[c, -s], [s, c]] (dir = 1) or its transpose [[c, s], [-s, c]]
// (dir = -1), with (c, s) from the tables (rotation times scale). Layout and accumulation are template
// arguments so that the loop has no branch and vectorizes; each element's arithmetic is the same either way.
template <RotaryLayout L, bool Acc>
void rotate_row_as(const real* __restrict in, real* __restrict out, const real* __restrict c,
                   const real* __restrict s, std::size_t P, std::size_t hs, real dir) {
  for (std::size_t i = 0; i < P; ++i) {
    const std::size_t i1 = L == RotaryLayout::interleaved ? 2 * i : i;
    const std::size_t i2 = L == RotaryLayout::interleaved ? 2 * i + 1 : i + P;
    const real x1 = in[i1], x2 = in[i2], sn = dir * s[i];
    const real y1 = x1 * c[i] - x2 * sn, y2 = x1 * sn + x2 * c[i];
    out[i1] = Acc ? out[i1] + y1 : y1;
    out[i2] = Acc ? out[i2] + y2 : y2;
  }
  for (std::size_t d = 2 * P; d < hs; ++d) out[d] = Acc ? out[d] + in[d] : in[d];
}

inline void rotate_row(const real* in, real* out, const real* c, const real* s, std::size_t P, std::size_t hs,
                       RotaryLayout layout, real dir, bool accumulate) {
  if (layout == RotaryLayout::interleaved)
    return accumulate ? rotate_row_as<RotaryLayout::interleaved, true>(in, out, c, s, P, hs, dir)
                      : rotate_row_as<RotaryLayout::interleaved, false>(in, out, c, s, P, hs, dir);
  return accumulate ? rotate_row_as<RotaryLayout::half, true>(in, out, c, s, P, hs, dir)
                    : rotate_row_as<RotaryLayout::half, false>(in, out, c, s, P, hs, dir);
}

// Every head row of x (B, H, T, hs), row (b, h, t) by the tables at (b, t); rows in parallel pieces.
void rotate_heads(const real* in, real* out, const RotaryTables& tb, std::size_t B, std::size_t H, std::size_t T,
                  std::size_t hs, RotaryLayout layout, real dir, bool accumulate) {
  const std::size_t P = tb.n_pairs();
  detail::for_rows(B * H * T, hs, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const std::size_t b = r / (H * T), t = r % T, a = (b * T + t) * P;
      rotate_row(in + r * hs, out + r * hs, tb.cos.data() + a, tb.sin.data() + a, P, hs, layout, dir, accumulate);
    }
  });
}

// rotary_qkv's rows: N = B T tokens of [q | k | v], each 3 H hs wide; the tables' row is the token's.
struct QkvRows {
  const RotaryTables *q, *k;
  std::size_t N, H, hs;
  RotaryLayout layout;
};

void rotate_qkv_rows(const QkvRows& r, const real* in, real* out, real dir, bool accumulate) {
  const std::size_t C = r.H * r.hs, W = 3 * C, P = r.q->n_pairs();
  detail::for_rows(r.N, W, [&](std::size_t n0, std::size_t n1) {
    for (std::size_t n = n0; n < n1; ++n) {
      const real *x = in + n * W, *cq = r.q->cos.data() + n * P, *sq = r.q->sin.data() + n * P;
      const real *ck = r.k->cos.data() + n * P, *sk = r.k->sin.data() + n * P;
      real* y = out + n * W;
      for (std::size_t h = 0; h < r.H; ++h) {
        rotate_row(x + h * r.hs, y + h * r.hs, cq, sq, P, r.hs, r.layout, dir, accumulate);
        rotate_row(x + C + h * r.hs, y + C + h * r.hs, ck, sk, P, r.hs, r.layout, dir, accumulate);
      }
      for (std::size_t i = 2 * C; i < W; ++i) y[i] = accumulate ? y[i] + x[i] : x[i];  // v
    }
  });
}
}  // namespace

Tensor rotary(const Tensor& x, std::shared_ptr<const RotaryTables> tables, RotaryLayout layout) {
  const char* op = "rotary";
  detail::require_defined(x, op, "x");
  detail::require(tables != nullptr, op, "no angle tables");
  const RotaryTables& tb = *tables;
  detail::require(x.ndim() == 4, op, "input must be (B, H, T, hs), got " + shape_str(x.shape()));
  const std::size_t B = x.size(0), H = x.size(1), T = x.size(2), hs = x.size(3), P = tb.n_pairs();
  detail::require(tb.cos.dimension() == 3 && tb.cos.shape()[0] == B && tb.cos.shape()[1] == T &&
                      tb.sin.shape() == tb.cos.shape(),
                  op, "angle tables " + shape_str(tb.cos.shape()) + " do not match input " + shape_str(x.shape()));
  detail::require(2 * P <= hs, op,
                  std::to_string(2 * P) + " rotated dims exceed the head size " + std::to_string(hs));
  Tensor out = detail::empty(x.shape());
  rotate_heads(x.data(), out.mutable_data(), tb, B, H, T, hs, layout, 1, false);
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [tables, layout, B, H, T, hs](const BackwardCtx& c) {
      bool fresh = false;
      real* gx = c.grad_write(0, fresh);  // every element written
      rotate_heads(c.grad_out().data(), gx, *tables, B, H, T, hs, layout, -1, !fresh);
    });
  }
  return out;
}

Tensor rotary_qkv(const Tensor& qkv, std::size_t n_heads, std::shared_ptr<const RotaryTables> q_tables,
                  std::shared_ptr<const RotaryTables> k_tables, RotaryLayout layout) {
  const char* op = "rotary_qkv";
  detail::require_defined(qkv, op, "qkv");
  detail::require(q_tables && k_tables, op, "no angle tables");
  detail::require(qkv.ndim() == 3, op, "input must be (B, T, 3 C), got " + shape_str(qkv.shape()));
  const std::size_t B = qkv.size(0), T = qkv.size(1), W = qkv.size(2), H = n_heads;
  detail::require(H > 0 && W % (3 * H) == 0, op,
                  "last dim of " + shape_str(qkv.shape()) + " is not 3 chunks x " + std::to_string(H) + " heads");
  const std::size_t hs = W / (3 * H), P = q_tables->n_pairs();
  for (const RotaryTables* tb : {q_tables.get(), k_tables.get()})
    detail::require(tb->cos.dimension() == 3 && tb->cos.shape()[0] == B && tb->cos.shape()[1] == T &&
                        tb->cos.shape()[2] == P && tb->sin.shape() == tb->cos.shape(),
                    op, "angle tables " + shape_str(tb->cos.shape()) + " do not match input " + shape_str(qkv.shape()));
  detail::require(2 * P <= hs, op, std::to_string(2 * P) + " rotated dims exceed the head size " + std::to_string(hs));
  Tensor out = detail::empty(qkv.shape());
  const QkvRows rows{q_tables.get(), k_tables.get(), B * T, H, hs, layout};
  rotate_qkv_rows(rows, qkv.data(), out.mutable_data(), 1, false);
  Tape& tape = Tape::current();
  if (tape.should_record({&qkv})) {
    tape.record(op, out, {qkv}, {}, [q_tables, k_tables, rows](const BackwardCtx& c) {
      bool fresh = false;
      real* g = c.grad_write(0, fresh);  // every element written; the tables live as long as the node
      rotate_qkv_rows(rows, c.grad_out().data(), g, -1, !fresh);
    });
  }
  return out;
}

}  // namespace pelab
