// Fused attention core: forward and backward side by side. Each (batch, head) block is two GEMMs
// forward (S = q k^T, O = P v) with a row softmax on S in between while it is hot in cache, and four
// GEMMs backward. P is kept for backward; logits are not.
// Relative keys/values (Shaw) add per block a gather of q a^K^T into the logits and a scatter of P into
// buckets then one GEMM with a^V; backward mirrors them and rebuilds the scattered probabilities from
// P instead of keeping them. The products with a shared table on the right, q a^K^T and dO a^V^T, run
// as one GEMM over all blocks stacked (B H Tq, hs): measured faster than per block at nb <= 64; the
// others run per block while their operands are hot (also measured faster: bench_core has the total).
#include "core/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/blas.hpp"
#include "core/ops/attention_dims.hpp"
#include "core/ops/common.hpp"
#include "core/ops/fast_math.hpp"

namespace pelab {

namespace {

using detail::AttnDims;
using detail::exp_nonpos;
using detail::kAttentionOp;

// Row reductions with 8 independent accumulators, so the compiler can keep them in one vector register.
template <class T>
T row_sum(const T* x, std::size_t n) {
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
T row_dot(const T* x, const T* y, std::size_t n) {
  T acc[8] = {};
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int u = 0; u < 8; ++u) acc[u] += x[j + u] * y[j + u];
  T s = 0;
  for (; j < n; ++j) s += x[j] * y[j];
  for (int u = 0; u < 8; ++u) s += acc[u];
  return s;
}

// The relative terms' bucket loops over one (batch, head) block. M (Tq, Tk) are logits, probabilities
// or their gradients; the block's bucket matrix A (Tq, nb) covers buckets [lo, lo + nb); idx (Tq, Tk)
// is the block's index table. Only the visible keys of each row are touched (masked entries of P and
// dS are exactly 0, so skipping them changes nothing).
struct BucketLoops {
  std::size_t Tq, Tk, nb, off;
  std::int32_t lo;
  bool causal;
  std::size_t visible(std::size_t i) const { return causal ? i + off + 1 : Tk; }
  // M_ij += scale A[i, idx_ij]   (the key term into the logits; the value term into dP). M and A are
  // distinct buffers: saying so (restrict) lets the compiler vectorize the loop with gathers.
  void gather_add(real* __restrict M, const real* __restrict A, const std::int32_t* idx, real scale) const {
    for (std::size_t i = 0; i < Tq; ++i) {
      real* __restrict m = M + i * Tk;
      const real* __restrict a = A + i * nb;  // a[c - lo] for bucket c
      const std::int32_t* ix = idx + i * Tk;
      for (std::size_t j = 0, n = visible(i); j < n; ++j) m[j] += scale * a[ix[j] - lo];
    }
  }
  // A[i, c] = sum of M_ij over the visible j with idx_ij = c   (P, or dS, by bucket).
  // Neighbouring keys often share a bucket (all keys past Shaw's clip distance; T5's wide far
  // buckets): runs are summed in a register, since adding each into memory would chain every add on
  // the previous store.
  void scatter(real* __restrict A, const real* __restrict M, const std::int32_t* idx) const {
    std::fill(A, A + Tq * nb, real(0));
    for (std::size_t i = 0; i < Tq; ++i) {
      const real* m = M + i * Tk;
      real* a = A + i * nb;
      const std::int32_t* ix = idx + i * Tk;
      std::int32_t cur = ix[0];
      real run = 0;
      for (std::size_t j = 0, n = visible(i); j < n; ++j) {
        if (ix[j] != cur) {
          a[cur - lo] += run;
          cur = ix[j];
          run = 0;
        }
        run += m[j];
      }
      a[cur - lo] += run;
    }
  }
};

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const AttnDims d = detail::attention_dims(q, k, v, opt);
  const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs, nb = d.rel_buckets;
  const std::size_t off = Tk - Tq;  // causal: row i sees keys [0, i + off]
  const bool causal = opt.causal;
  const Tensor bias = opt.bias, rel_k = opt.rel.key, rel_v = opt.rel.value;
  const bool use_rk = rel_k.defined() && nb > 0, use_rv = rel_v.defined() && nb > 0;
  std::shared_ptr<const IndexArray> index = opt.rel.index;
  const BucketLoops loops{Tq, Tk, nb, off, d.rel_lo, causal};
  const std::size_t rows = B * H * Tq;  // every block's query rows, stacked

  std::vector<real> scales(H);
  for (std::size_t h = 0; h < H; ++h)
    scales[h] = !opt.head_scale.empty() ? opt.head_scale[h]
                : opt.scale >= real(0)  ? opt.scale
                                        : real(1) / std::sqrt(real(hs));

  auto P = std::make_shared<Array>(Shape{B, H, Tq, Tk});  // (B, H, Tq, Tk) probabilities
  Tensor out = detail::empty(q.shape());                  // (B, H, Tq, hs)
  {
    const real *pq = q.data(), *pk = k.data(), *pv = v.data();
    const real* pbias = bias.defined() ? bias.data() : nullptr;
    const real* pav = use_rv ? rel_v.data() + d.rel_lo * hs : nullptr;  // rows [lo, lo + nb) of a^V
    // Bucket matrices (Tq, nb) per block: q a^K^T for all blocks (each block's then holds P by bucket),
    // or one block's P by bucket when there is no key term.
    Array buckets(Shape{use_rk ? rows * nb : use_rv ? Tq * nb : 0});
    real *pp = P->data(), *po = out.mutable_data(), *pbk = buckets.data();
    if (use_rk)
      blas::gemm(false, true, rows, nb, hs, real(1), pq, hs, rel_k.data() + d.rel_lo * hs, hs, real(0), pbk, nb);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t bh = b * H + h;
        real* S = pp + bh * Tq * Tk;
        real* blk = use_rk ? pbk + bh * Tq * nb : pbk;
        real* obh = po + bh * Tq * hs;
        const std::int32_t* idx = d.rel_index(index.get(), b);
        // S (Tq, Tk) = scale_h * (q k^T + (q a^K^T)[i, idx_ij])
        blas::gemm(false, true, Tq, Tk, hs, scales[h], pq + bh * Tq * hs, hs, pk + bh * Tk * hs, hs, real(0), S, Tk);
        if (use_rk) loops.gather_add(S, blk, idx, scales[h]);
        const real* bh_bias = d.bias_block(pbias, b, h);
        for (std::size_t i = 0; i < Tq; ++i) {
          real* s = S + i * Tk;
          const std::size_t n = loops.visible(i);
          if (bh_bias) {
            const real* br = bh_bias + i * Tk;
            for (std::size_t j = 0; j < n; ++j) s[j] += br[j];
          }
          real mx = s[0];
          for (std::size_t j = 1; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
          for (std::size_t j = 0; j < n; ++j) s[j] = exp_nonpos(s[j] - mx);
          const real inv = real(1) / row_sum(s, n);
          for (std::size_t j = 0; j < n; ++j) s[j] *= inv;
          std::fill(s + n, s + Tk, real(0));  // masked: exactly zero
        }
        // O (Tq, hs) = P v (+ PB a^V, PB = P by bucket)
        blas::gemm(false, false, Tq, hs, Tk, real(1), S, Tk, pv + bh * Tk * hs, hs, real(0), obh, hs);
        if (use_rv) {
          loops.scatter(blk, S, idx);
          blas::gemm(false, false, Tq, hs, nb, real(1), blk, nb, pav, hs, real(1), obh, hs);
        }
      }
  }

  Tape& tape = Tape::current();
  const bool record = tape.should_record({&q, &k, &v, &bias, &rel_k, &rel_v});
  if (opt.probs_out) *opt.probs_out = record ? Array(*P) : std::move(*P);
  if (!record) return out;
  // What each gradient reads: dV P and dO; da^V also P (by bucket) and dO; dS (for dq, dk, dbias,
  // da^K) also v, and a^V when there is a value term; dq also k and a^K; dk and da^K also q. The
  // bias's value is never read, and P is op-private (shared with the closure, no copy).
  const bool gq = q.requires_grad(), gk = k.requires_grad();
  const bool g_rk = use_rk && rel_k.requires_grad();
  const bool need_ds = gq || gk || (bias.defined() && bias.requires_grad()) || g_rk;
  const Tensor save_q = gk || g_rk ? q : Tensor(), save_k = gq ? k : Tensor(), save_v = need_ds ? v : Tensor();
  const Tensor save_rk = use_rk && gq ? rel_k : Tensor(), save_rv = use_rv && need_ds ? rel_v : Tensor();
  auto backward = [P, d, scales, loops, index, need_ds, use_rk, use_rv](const BackwardCtx& c) {
    const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs, nb = d.rel_buckets, lo = d.rel_lo;
    const std::size_t rows = B * H * Tq;
    const bool rel = use_rk || use_rv;
    const real *pq = c.saved(0), *pk = c.saved(1), *pv = c.saved(2), *pp = P->data();
    const real* pak = rel && c.saved(3) ? c.saved(3) + lo * hs : nullptr;  // rows [lo, lo + nb) of a^K
    const real* pav = rel && c.saved(4) ? c.saved(4) + lo * hs : nullptr;
    const real* pg = c.grad_out().data();
    real* dq = c.grad(0);
    real* dk = c.grad(1);
    real* dv = c.grad(2);
    real* dbias = c.grad(3);
    real* dak = rel && c.grad(4) ? c.grad(4) + lo * hs : nullptr;
    real* dav = rel && c.grad(5) ? c.grad(5) + lo * hs : nullptr;
    // Scratch, reused across blocks: dP, then dS in place (Tq, Tk); PB, P by bucket (Tq, nb); and
    // dO a^V^T for all blocks (B H Tq, nb), each block's then overwritten by dS by bucket (else one
    // block for that).
    const bool key_grads = need_ds && use_rk && (dq || dak);
    const std::size_t n_ds = need_ds ? Tq * Tk : 0, n_pb = dav ? Tq * nb : 0;
    const std::size_t n_db = need_ds && pav ? rows * nb : key_grads ? Tq * nb : 0;
    Array scratch(Shape{n_ds + n_pb + n_db});
    real *dS = scratch.data(), *pb = dS + n_ds, *db = pb + n_pb;
    if (need_ds && pav) blas::gemm(false, true, rows, nb, hs, real(1), pg, hs, pav, hs, real(0), db, nb);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t bh = b * H + h;
        const real *Pbh = pp + bh * Tq * Tk, *dO = pg + bh * Tq * hs, *qbh = pq ? pq + bh * Tq * hs : nullptr;
        const std::int32_t* idx = d.rel_index(index.get(), b);
        if (dv)  // dV (Tk, hs) += P^T dO
          blas::gemm(true, false, Tk, hs, Tq, real(1), Pbh, Tk, dO, hs, real(1), dv + bh * Tk * hs, hs);
        if (dav) {  // da^V (nb, hs) += PB^T dO
          loops.scatter(pb, Pbh, idx);
          blas::gemm(true, false, nb, hs, Tq, real(1), pb, nb, dO, hs, real(1), dav, hs);
        }
        if (!need_ds) continue;
        real* dbb = pav ? db + bh * Tq * nb : db;
        // dP (Tq, Tk) = dO V^T (+ (dO a^V^T)[i, idx_ij] with a value term)
        blas::gemm(false, true, Tq, Tk, hs, real(1), dO, hs, pv + bh * Tk * hs, hs, real(0), dS, Tk);
        if (pav) loops.gather_add(dS, dbb, idx, real(1));
        // dS = P * (dP - rowsum(dP * P)); masked entries have P = 0, so dS = 0 there.
        for (std::size_t i = 0; i < Tq; ++i) {
          real* s = dS + i * Tk;
          const real* p = Pbh + i * Tk;
          const std::size_t n = loops.visible(i);
          const real dot = row_dot(s, p, n);
          for (std::size_t j = 0; j < n; ++j) s[j] = p[j] * (s[j] - dot);
          std::fill(s + n, s + Tk, real(0));
        }
        if (dbias) {  // summed over the dims the bias is broadcast along
          real* dbias_bh = d.bias_block(dbias, b, h);
          for (std::size_t i = 0; i < Tq * Tk; ++i) dbias_bh[i] += dS[i];
        }
        const real sc = scales[h];
        if (dq)  // dQ (Tq, hs) += scale dS K
          blas::gemm(false, false, Tq, hs, Tk, sc, dS, Tk, pk + bh * Tk * hs, hs, real(1), dq + bh * Tq * hs, hs);
        if (dk)  // dK (Tk, hs) += scale dS^T Q
          blas::gemm(true, false, Tk, hs, Tq, sc, dS, Tk, qbh, hs, real(1), dk + bh * Tk * hs, hs);
        if (key_grads) {  // dSB (Tq, nb) = dS by bucket
          loops.scatter(dbb, dS, idx);
          if (dq)  // dQ += scale dSB a^K
            blas::gemm(false, false, Tq, hs, nb, sc, dbb, nb, pak, hs, real(1), dq + bh * Tq * hs, hs);
          if (dak)  // da^K (nb, hs) += scale dSB^T Q
            blas::gemm(true, false, nb, hs, Tq, sc, dbb, nb, qbh, hs, real(1), dak, hs);
        }
      }
  };
  // Plain attention records four inputs (no relative terms): its node fits the tape's inline lists.
  if (rel_k.defined() || rel_v.defined())
    tape.record(kAttentionOp, out, {q, k, v, bias, rel_k, rel_v}, {save_q, save_k, save_v, save_rk, save_rv},
                std::move(backward));
  else
    tape.record(kAttentionOp, out, {q, k, v, bias}, {save_q, save_k, save_v}, std::move(backward));
  return out;
}

}  // namespace pelab
