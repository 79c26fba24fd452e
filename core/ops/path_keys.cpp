// PaTH's key transform: forward and backward side by side (formulas in path_keys.hpp).
//
// Layout: a (batch, head) block's keys live transposed in scratch, KT (hs, T) (column c of every key is
// one contiguous row), so that every per-step update runs over the keys j: a step's dots d_j = K_j . w_i
// are hs axpys over j, the update K_j -= beta_i d_j w_i is hs more, and no sum is reassociated to
// vectorize. The few sums over j (dq, dw, dbeta) use 8 partial sums in a fixed order (lane_sum).
// Nothing here contracts to FMA (-ffp-contract=off), so every PELAB_HOT clone computes the same bits.
#include "core/ops/path_keys.hpp"

#include <algorithm>
#include <string>

#include "core/ops/common.hpp"
#include "core/simd.hpp"

namespace pelab {

namespace {

// sum_{j < n} term(j) with 8 partial sums (sum l collects j = l mod 8) added in a fixed tree.
template <class F>
inline real lane_sum(std::size_t n, F term) {
  real s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (std::size_t l = 0; l < 8; ++l) s[l] += term(j + l);
  for (std::size_t l = 0; j + l < n; ++l) s[l] += term(j + l);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// x (T, hs) -> xt (hs, T).
inline void to_columns(const real* x, real* xt, std::size_t T, std::size_t hs) {
  for (std::size_t j = 0; j < T; ++j)
    for (std::size_t c = 0; c < hs; ++c) xt[c * T + j] = x[j * hs + c];
}

// d[j] = K_j . w for the keys j < n, from the columns KT (hs, T), summed over c in order.
inline void key_dots(const real* KT, const real* w, real* d, std::size_t n, std::size_t T, std::size_t hs) {
  std::fill(d, d + n, real(0));
  for (std::size_t c = 0; c < hs; ++c) {
    const real* Kc = KT + c * T;
    const real wc = w[c];
    for (std::size_t j = 0; j < n; ++j) d[j] += Kc[j] * wc;
  }
}

struct Block {  // one (batch, head): q, k, w (T, hs), beta (T); out or its gradient G (T, T)
  const real *q, *k, *w, *beta;
  std::size_t T, hs;
};

// Scratch reals per worker: forward, backward.
std::size_t forward_scratch(std::size_t T, std::size_t hs) { return 2 * T * hs + T; }
std::size_t backward_scratch(std::size_t T, std::size_t hs) { return T * (T - 1) / 2 + 4 * T * hs + 3 * T; }

// Row i of out: o (T) = scale * q_i . (K^(i)_j - k_j) for j < i, 0 for j >= i; KT (hs, T) goes from
// K^(i-1) to K^(i). qi, wi (hs); bd (T) scratch.
inline void forward_row(std::size_t i, const real* qi, const real* wi, real beta_i, real scale, real* KT,
                        const real* kT, real* bd, real* o, std::size_t T, std::size_t hs) {
  std::fill(o, o + T, real(0));
  if (i == 0) return;
  key_dots(KT, wi, bd, i, T, hs);
  for (std::size_t j = 0; j < i; ++j) bd[j] *= beta_i;
  for (std::size_t c = 0; c < hs; ++c) {
    real* Kc = KT + c * T;
    const real* kc = kT + c * T;
    const real wc = wi[c], qc = qi[c];
    for (std::size_t j = 0; j < i; ++j) {
      Kc[j] -= wc * bd[j];
      o[j] += qc * (Kc[j] - kc[j]);
    }
  }
  for (std::size_t j = 0; j < i; ++j) o[j] *= scale;
}

// out (T, T) = scale * q_i . (K^(i)_j - k_j) below the diagonal, 0 elsewhere.
PELAB_HOT void forward_block(const Block& b, real scale, real* out, real* scratch) {
  const std::size_t T = b.T, hs = b.hs;
  real* KT = scratch;            // (hs, T) the keys as query i sees them
  real* kT = KT + T * hs;        // (hs, T) the keys as given
  real* bd = kT + T * hs;        // (T) beta_i d_ij
  to_columns(b.k, kT, T, hs);
  std::copy(kT, kT + T * hs, KT);
  for (std::size_t i = 0; i < T; ++i)
    forward_row(i, b.q + i * hs, b.w + i * hs, b.beta[i], scale, KT, kT, bd, out + i * T, T, hs);
}

// Rows [from, to) of one block's out, the keys KT carried in from row `next` (rows below it were given
// before: 0 here); query rows qt (to - from, hs).
PELAB_HOT void forward_rows(const Block& b, const real* qt, real scale, std::size_t next, std::size_t from,
                            std::size_t to, real* KT, const real* kT, real* bd, real* out) {
  const std::size_t T = b.T, hs = b.hs;
  for (std::size_t i = from; i < to; ++i) {
    real* o = out + (i - from) * T;
    if (i < next) std::fill(o, o + T, real(0));
    else forward_row(i, qt + (i - from) * hs, b.w + i * hs, b.beta[i], scale, KT, kT, bd, o, T, hs);
  }
}

struct BlockGrads {  // one (batch, head)'s gradient rows, each null when not wanted (accumulated into)
  real *dq, *dk, *dw, *dbeta;
};

// The forward again, keeping d_ij (packed rows: row i at i (i - 1) / 2) and leaving KT = K^(T-1); dq
// on the way, as it reads K^(i). G (T, T) is dL/dout.
PELAB_HOT void recompute_block(const Block& b, const real* G, real scale, real* dq, real* KT, const real* kT,
                               real* D, real* g, real* bd) {
  const std::size_t T = b.T, hs = b.hs;
  std::copy(kT, kT + T * hs, KT);
  for (std::size_t i = 1; i < T; ++i) {
    const real* wi = b.w + i * hs;
    real* d = D + i * (i - 1) / 2;
    key_dots(KT, wi, d, i, T, hs);
    for (std::size_t j = 0; j < i; ++j) {
      bd[j] = b.beta[i] * d[j];
      g[j] = scale * G[i * T + j];
    }
    for (std::size_t c = 0; c < hs; ++c) {
      real* Kc = KT + c * T;
      const real* kc = kT + c * T;
      const real wc = wi[c];
      for (std::size_t j = 0; j < i; ++j) Kc[j] -= wc * bd[j];
      if (dq) dq[i * hs + c] += lane_sum(i, [&](std::size_t j) { return g[j] * (Kc[j] - kc[j]); });
    }
  }
}

// The reverse pass from KT = K^(T-1): the keys' adjoint AT (hs, T), the direct term RT (hs, T) =
// sum_i G_ij q_i, dw and dbeta per step; then dk = A - R.
PELAB_HOT void reverse_block(const Block& b, const real* G, real scale, const BlockGrads& o, real* KT, real* AT,
                             real* RT, const real* D, real* g, real* a, real* bd) {
  const std::size_t T = b.T, hs = b.hs;
  std::fill(AT, AT + T * hs, real(0));
  std::fill(RT, RT + T * hs, real(0));
  for (std::size_t i = T; i-- > 1;) {
    const real *wi = b.w + i * hs, *qi = b.q + i * hs, *d = D + i * (i - 1) / 2;
    const real beta = b.beta[i];
    for (std::size_t j = 0; j < i; ++j) {
      g[j] = scale * G[i * T + j];
      a[j] = 0;
      bd[j] = beta * d[j];
    }
    for (std::size_t c = 0; c < hs; ++c) {  // out_ij reads K^(i)_j: A_j += G_ij q_i; then a_j = A_j . w_i
      real *Ac = AT + c * T, *Rc = RT + c * T;
      const real qc = qi[c], wc = wi[c];
      for (std::size_t j = 0; j < i; ++j) {
        const real gq = g[j] * qc;
        Ac[j] += gq;
        Rc[j] += gq;
        a[j] += Ac[j] * wc;
      }
    }
    if (o.dbeta) o.dbeta[i] -= lane_sum(i, [&](std::size_t j) { return a[j] * d[j]; });
    for (std::size_t c = 0; c < hs; ++c) {  // back through step i: K^(i-1), dw_i, then A^(i-1)
      real *Kc = KT + c * T, *Ac = AT + c * T;
      const real wc = wi[c], bw = beta * wc;
      for (std::size_t j = 0; j < i; ++j) Kc[j] += wc * bd[j];
      if (o.dw) o.dw[i * hs + c] -= beta * lane_sum(i, [&](std::size_t j) { return a[j] * Kc[j] + d[j] * Ac[j]; });
      for (std::size_t j = 0; j < i; ++j) Ac[j] -= bw * a[j];
    }
  }
  if (o.dk)
    for (std::size_t j = 0; j < T; ++j)
      for (std::size_t c = 0; c < hs; ++c) o.dk[j * hs + c] += AT[c * T + j] - RT[c * T + j];
}

void backward_block(const Block& b, const real* G, real scale, const BlockGrads& o, real* scratch) {
  const std::size_t T = b.T, hs = b.hs;
  real* D = scratch;                  // (T (T - 1) / 2) d_ij, row i at i (i - 1) / 2
  real* KT = D + T * (T - 1) / 2;     // (hs, T) keys
  real* kT = KT + T * hs;             // (hs, T) the keys as given
  real* AT = kT + T * hs;             // (hs, T) their adjoint
  real* RT = AT + T * hs;             // (hs, T) sum_i G_ij q_i
  real *g = RT + T * hs, *a = g + T, *bd = a + T;  // (T) each: a row of G, a_j, beta_i d_ij
  to_columns(b.k, kT, T, hs);
  recompute_block(b, G, scale, o.dq, KT, kT, D, g, bd);
  if (o.dk || o.dw || o.dbeta) reverse_block(b, G, scale, o, KT, AT, RT, D, g, a, bd);
}

// (batch, head) blocks per piece: at least kParallelWork multiply-adds.
std::size_t block_grain(std::size_t T, std::size_t hs) {
  const std::size_t work = std::max<std::size_t>(1, T * T * hs);
  return work >= detail::kParallelWork ? 1 : detail::kParallelWork / work;
}

}  // namespace

Tensor path_key_bias(const Tensor& q, const Tensor& k, const Tensor& w, const Tensor& beta, real scale) {
  const char* op = "path_key_bias";
  detail::require_defined(q, op, "q");
  detail::require_defined(k, op, "k");
  detail::require_defined(w, op, "w");
  detail::require_defined(beta, op, "beta");
  detail::require(q.ndim() == 4, op, "q must be (B, H, T, hs), got " + shape_str(q.shape()));
  detail::require(k.shape() == q.shape() && w.shape() == q.shape(), op,
                  "q, k and w must have one shape, got " + shape_str(q.shape()) + ", " + shape_str(k.shape()) +
                      " and " + shape_str(w.shape()));
  const std::size_t B = q.size(0), H = q.size(1), T = q.size(2), hs = q.size(3), BH = B * H;
  detail::require(beta.shape() == Shape{B, H, T}, op,
                  "beta must be (B, H, T) = " + shape_str(Shape{B, H, T}) + ", got " + shape_str(beta.shape()));
  Tensor out = detail::empty({B, H, T, T});
  {
    const real *pq = q.data(), *pk = k.data(), *pw = w.data(), *pb = beta.data();
    real* po = out.mutable_data();
    const std::size_t grain = block_grain(T, hs), per_worker = forward_scratch(T, hs);
    Array scratch(Shape{parallel::workers(BH, grain) * per_worker});
    parallel::for_range(BH, grain, [&](std::size_t worker, std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) {
        const Block blk{pq + r * T * hs, pk + r * T * hs, pw + r * T * hs, pb + r * T, T, hs};
        forward_block(blk, scale, po + r * T * T, scratch.data() + worker * per_worker);
      }
    });
  }
  Tape& tape = Tape::current();
  if (!tape.should_record({&q, &k, &w, &beta})) return out;
  // q is read only by the keys' adjoint (dk, dw, dbeta); k, w and beta by every gradient.
  const bool need_q = k.requires_grad() || w.requires_grad() || beta.requires_grad();
  auto backward = [BH, T, hs, scale](const BackwardCtx& c) {
    const real *pq = c.saved(0), *pk = c.saved(1), *pw = c.saved(2), *pb = c.saved(3);
    const real* pg = c.grad_out().data();
    real *dq = c.grad(0), *dk = c.grad(1), *dw = c.grad(2), *db = c.grad(3);
    const std::size_t grain = block_grain(T, hs), per_worker = backward_scratch(T, hs);
    Array scratch(Shape{parallel::workers(BH, grain) * per_worker});
    parallel::for_range(BH, grain, [&](std::size_t worker, std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) {
        const std::size_t o = r * T * hs;
        const Block blk{pq ? pq + o : nullptr, pk + o, pw + o, pb + r * T, T, hs};
        const BlockGrads grads{dq ? dq + o : nullptr, dk ? dk + o : nullptr, dw ? dw + o : nullptr,
                               db ? db + r * T : nullptr};
        backward_block(blk, pg + r * T * T, scale, grads, scratch.data() + worker * per_worker);
      }
    });
  };
  tape.record(op, out, {q, k, w, beta}, {need_q ? q : Tensor(), k, w, beta}, std::move(backward));
  return out;
}

PathKeys path_keys_start(const Array& k) {
  detail::require(k.dimension() == 4, "path_keys_start", "k must be (B, H, T, hs), got " + shape_str(k.shape()));
  PathKeys s;
  s.B = k.shape()[0], s.H = k.shape()[1], s.T = k.shape()[2], s.hs = k.shape()[3];
  const std::size_t BH = s.B * s.H, n = s.T * s.hs;
  s.kT.resize({BH, s.hs, s.T});
  for (std::size_t r = 0, m = shape_only() ? 0 : BH; r < m; ++r)  // core/shape_only.hpp
    to_columns(k.data() + r * n, s.kT.data() + r * n, s.T, s.hs);
  s.KT = array_copy(s.kT);
  return s;
}

Array path_key_bias_rows(const Array& q, const Array& w, const Array& beta, real scale, PathKeys& keys,
                         std::size_t from, std::size_t to) {
  const char* op = "path_key_bias_rows";
  const std::size_t B = keys.B, H = keys.H, T = keys.T, hs = keys.hs, BH = B * H;
  detail::require(from <= to && to <= T && from <= keys.next, op,
                  "rows [" + std::to_string(from) + ", " + std::to_string(to) + ") of " + std::to_string(T) +
                      " leave a gap after the " + std::to_string(keys.next) + " rows given");
  detail::require(q.shape() == Shape{B, H, to - from, hs} && w.shape() == Shape{B, H, T, hs} &&
                      beta.shape() == Shape{B, H, T},
                  op, "q " + shape_str(q.shape()) + ", w " + shape_str(w.shape()) + " and beta " +
                          shape_str(beta.shape()) + " do not match the keys (B, H, T, hs) = " +
                          shape_str(Shape{B, H, T, hs}) + " and rows [" + std::to_string(from) + ", " +
                          std::to_string(to) + ")");
  const std::size_t n = to - from;
  Array out(Shape{B, H, n, T});
  const std::size_t work = std::max<std::size_t>(1, n * T * hs);  // per (batch, head), as block_grain
  const std::size_t grain = work >= detail::kParallelWork ? 1 : detail::kParallelWork / work;
  Array scratch(Shape{parallel::workers(BH, grain) * T});
  parallel::for_range(BH, grain, [&](std::size_t worker, std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const Block blk{nullptr, nullptr, w.data() + r * T * hs, beta.data() + r * T, T, hs};
      forward_rows(blk, q.data() + r * n * hs, scale, keys.next, from, to, keys.KT.data() + r * T * hs,
                   keys.kT.data() + r * T * hs, scratch.data() + worker * T, out.data() + r * n * T);
    }
  });
  keys.next = std::max(keys.next, to);
  return out;
}

}  // namespace pelab
