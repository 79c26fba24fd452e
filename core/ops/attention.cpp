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
#include "core/ops/kernels.hpp"
#include "core/parallel.hpp"

namespace pelab {

namespace {

using detail::AttnDims;
using detail::kAttentionOp;

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

// Where one (batch, head) block of a (.., T, hs)-shaped operand lives: rows of hs values, ld apart,
// starting at base + b * batch_stride + h * head_stride. (B, H, T, hs) tensors are contiguous blocks;
// the fused projection (B, T, 3C) holds q, k and v as column slices (ld = 3C), and the merged output
// (B, T, C) is written in place (ld = C): no head split or merge copies.
struct HeadLayout {
  std::size_t offset = 0, batch_stride = 0, head_stride = 0, ld = 0;
  static HeadLayout split(std::size_t H, std::size_t T, std::size_t hs) { return {0, H * T * hs, T * hs, hs}; }
  static HeadLayout merged(std::size_t T, std::size_t width, std::size_t offset, std::size_t hs) {
    return {offset, T * width, hs, width};
  }
  template <class P>
  P* at(P* base, std::size_t b, std::size_t h) const {
    return base + offset + b * batch_stride + h * head_stride;
  }
  // The B H T rows form one (B H T, hs) matrix in block order (a stacked GEMM is possible).
  bool stacked(std::size_t H, std::size_t T, std::size_t hs) const {
    return offset == 0 && ld == hs && head_stride == T * hs && batch_stride == H * T * hs;
  }
};

struct Layouts {
  HeadLayout q, k, v, out;
};

// The attention core on raw layouts: q (B, H, Tq, hs) etc. described by Layouts; q, k, v and out may
// share one buffer (packed). Records one node with inputs {q_in, k_in, v_in, bias[, a^K, a^V]}.
Tensor attention_core(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, bool packed, Tensor out,
                      const AttnDims& d, const Layouts& L, const AttentionOptions& opt) {
  const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs, nb = d.rel_buckets;
  const std::size_t off = Tk - Tq;  // causal: row i sees keys [0, i + off]
  const bool causal = opt.causal;
  const Tensor bias = opt.bias, rel_k = opt.rel.key, rel_v = opt.rel.value;
  const bool use_rk = rel_k.defined() && nb > 0, use_rv = rel_v.defined() && nb > 0;
  std::shared_ptr<const IndexArray> index = opt.rel.index;
  const BucketLoops loops{Tq, Tk, nb, off, d.rel_lo, causal};
  const std::size_t rows = B * H * Tq;  // every block's query rows, stacked
  const std::size_t blocks = B * H;
  const std::size_t block_grain = std::max<std::size_t>(1, detail::kParallelWork / (Tq * Tk * 4));

  std::vector<real> scales(H);
  for (std::size_t h = 0; h < H; ++h)
    scales[h] = !opt.head_scale.empty() ? opt.head_scale[h]
                : opt.scale >= real(0)  ? opt.scale
                                        : real(1) / std::sqrt(real(hs));

  auto P = std::make_shared<Array>(Shape{B, H, Tq, Tk});  // (B, H, Tq, Tk) probabilities
  {
    const real *pq = q_in.data(), *pk = k_in.data(), *pv = v_in.data();
    const real* pbias = bias.defined() ? bias.data() : nullptr;
    const real* pak = use_rk ? rel_k.data() + d.rel_lo * hs : nullptr;  // rows [lo, lo + nb) of a^K
    const real* pav = use_rv ? rel_v.data() + d.rel_lo * hs : nullptr;  // rows [lo, lo + nb) of a^V
    // Bucket matrices (Tq, nb) per block: q a^K^T for all blocks (each block's then holds P by
    // bucket), or one per worker for P by bucket when there is no key term.
    const std::size_t workers = parallel::workers(blocks, block_grain);
    Array buckets(Shape{use_rk ? rows * nb : use_rv ? workers * Tq * nb : 0});
    real *pp = P->data(), *po = out.mutable_data(), *pbk = buckets.data();
    const bool stacked_q = L.q.stacked(H, Tq, hs);
    if (use_rk && stacked_q)
      blas::gemm(false, true, rows, nb, hs, real(1), pq, hs, pak, hs, real(0), pbk, nb);
    parallel::for_range(blocks, block_grain, [&](std::size_t worker, std::size_t bh0, std::size_t bh1) {
      for (std::size_t bh = bh0; bh < bh1; ++bh) {
        const std::size_t b = bh / H, h = bh % H;
        real* S = pp + bh * Tq * Tk;
        real* blk = use_rk ? pbk + bh * Tq * nb : pbk + worker * Tq * nb;
        const real* qbh = L.q.at(pq, b, h);
        real* obh = L.out.at(po, b, h);
        const std::int32_t* idx = d.rel_index(index.get(), b);
        if (use_rk && !stacked_q)
          blas::gemm(false, true, Tq, nb, hs, real(1), qbh, L.q.ld, pak, hs, real(0), blk, nb);
        // S (Tq, Tk) = scale_h * (q k^T + (q a^K^T)[i, idx_ij]), then + bias and the masked softmax
        blas::gemm(false, true, Tq, Tk, hs, scales[h], qbh, L.q.ld, L.k.at(pk, b, h), L.k.ld, real(0), S, Tk);
        if (use_rk) loops.gather_add(S, blk, idx, scales[h]);
        kernels::attention_softmax_rows(S, d.bias_block(pbias, b, h), 0, Tq, Tk, off, causal);
        // O (Tq, hs) = P v (+ PB a^V, PB = P by bucket)
        blas::gemm(false, false, Tq, hs, Tk, real(1), S, Tk, L.v.at(pv, b, h), L.v.ld, real(0), obh, L.out.ld);
        if (use_rv) {
          loops.scatter(blk, S, idx);
          blas::gemm(false, false, Tq, hs, nb, real(1), blk, nb, pav, hs, real(1), obh, L.out.ld);
        }
      }
    });
  }

  Tape& tape = Tape::current();
  const bool record = packed ? tape.should_record({&q_in, &bias, &rel_k, &rel_v})
                             : tape.should_record({&q_in, &k_in, &v_in, &bias, &rel_k, &rel_v});
  if (opt.probs_out) *opt.probs_out = record ? Array(*P) : std::move(*P);
  if (!record) return out;
  // What each gradient reads: dV P and dO; da^V also P (by bucket) and dO; dS (for dq, dk, dbias,
  // da^K) also v, and a^V when there is a value term; dq also k and a^K; dk and da^K also q. The
  // bias's value is never read, and P is op-private (shared with the closure, no copy). Packed, q, k
  // and v are one tensor, saved once when any of them is read.
  const bool gq = q_in.requires_grad(), gk = k_in.requires_grad();
  const bool g_rk = use_rk && rel_k.requires_grad();
  const bool need_ds = gq || gk || (bias.defined() && bias.requires_grad()) || g_rk;
  Tensor save_q = gk || g_rk ? q_in : Tensor(), save_k = gq ? k_in : Tensor(), save_v = need_ds ? v_in : Tensor();
  if (packed) save_q = save_k = save_v = (save_q.defined() || save_k.defined() || save_v.defined()) ? q_in : Tensor();
  const Tensor save_rk = use_rk && gq ? rel_k : Tensor(), save_rv = use_rv && need_ds ? rel_v : Tensor();
  auto backward = [P, d, L, packed, scales, loops, index, need_ds, use_rk, use_rv, block_grain](const BackwardCtx& c) {
    const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs, nb = d.rel_buckets, lo = d.rel_lo;
    const std::size_t rows = B * H * Tq, blocks = B * H, off = Tk - Tq;
    const bool rel = use_rk || use_rv, causal = loops.causal;
    // Saved: q, k, v (packed: q_in three times), then a^K, a^V.
    const real *pq = c.saved(0), *pk = c.saved(packed ? 0 : 1), *pv = c.saved(packed ? 0 : 2), *pp = P->data();
    const std::size_t irk = packed ? 2 : 4, irv = packed ? 3 : 5, ib = packed ? 1 : 3;  // input slots
    const std::size_t srk = packed ? 1 : 3, srv = packed ? 2 : 4;                        // saved slots
    const real* pak = rel && c.saved(srk) ? c.saved(srk) + lo * hs : nullptr;  // rows [lo, lo + nb) of a^K
    const real* pav = rel && c.saved(srv) ? c.saved(srv) + lo * hs : nullptr;
    const real* pg = c.grad_out().data();
    // Gradients of q, k and v, each block's written by its GEMMs (beta 0 into a fresh buffer). Packed:
    // one buffer, every element of it written by exactly one of the three. Inputs that are one tensor
    // (attention(x, x, x)) accumulate into a zeroed buffer instead.
    bool fq = false, fk = false, fv = false;
    real *dq, *dk, *dv;
    if (packed) {
      dq = dk = dv = c.grad_write(0, fq);
      fk = fv = fq;
    } else if (c.same_input(0, 1) || c.same_input(0, 2) || c.same_input(1, 2)) {
      dq = c.grad(0), dk = c.grad(1), dv = c.grad(2);
    } else {
      dq = c.grad_write(0, fq), dk = c.grad_write(1, fk), dv = c.grad_write(2, fv);
    }
    if (packed && !dq) dk = dv = nullptr;
    real* dbias = c.grad(ib);
    real* dak = rel && c.grad(irk) ? c.grad(irk) + lo * hs : nullptr;
    real* dav = rel && c.grad(irv) ? c.grad(irv) + lo * hs : nullptr;
    const HeadLayout& lo_ = L.out;
    const bool stacked_o = lo_.stacked(H, Tq, hs), stacked_q = L.q.stacked(H, Tq, hs);
    // Relative terms need, stacked over all blocks (rows, nb): dO a^V^T (each block's then overwritten
    // by dS by bucket, scaled by the head's scale for da^K) and P by bucket for da^V; da^K and da^V are
    // then one GEMM each over all rows, so blocks can run on any thread.
    const bool key_grads = need_ds && use_rk && (dq || dak);
    const std::size_t n_db = need_ds && (pav || key_grads) ? rows * nb : 0, n_pb = dav ? rows * nb : 0;
    Array stacked(Shape{n_db + n_pb});
    real *db = stacked.data(), *pb = db + n_db;
    if (need_ds && pav && stacked_o) blas::gemm(false, true, rows, nb, hs, real(1), pg, hs, pav, hs, real(0), db, nb);
    // Blocks are grouped by the bias-gradient block they add into (all blocks of a group run in order
    // on one thread): the sums keep the serial order whatever the thread count.
    const bool group_bias = dbias && (d.bias_batch == 1 || d.bias_heads == 1);
    const std::size_t bias_b = group_bias ? (d.bias_batch == 1 ? 1 : B) : B;
    const std::size_t bias_h = group_bias ? (d.bias_heads == 1 ? 1 : H) : H;
    const std::size_t groups = bias_b * bias_h;
    const std::size_t per_group = blocks / groups;  // blocks sharing one bias-gradient block
    const std::size_t workers = parallel::workers(groups, std::max<std::size_t>(1, block_grain / per_group));
    Array scratch(Shape{need_ds ? workers * Tq * Tk : 0});  // dP, then dS in place, per worker
    parallel::for_range(groups, std::max<std::size_t>(1, block_grain / per_group),
                        [&](std::size_t worker, std::size_t g0, std::size_t g1) {
      real* dS = scratch.data() + worker * Tq * Tk;
      for (std::size_t gidx = g0; gidx < g1; ++gidx)
        for (std::size_t m = 0; m < per_group; ++m) {
          // Group gidx = (gb, gh) of the bias grid; its blocks in (b, h) order.
          const std::size_t gb = gidx / bias_h, gh = gidx % bias_h;
          const std::size_t nb_b = B / bias_b, nb_h = H / bias_h;
          const std::size_t b = gb * nb_b + m / nb_h, h = gh * nb_h + m % nb_h;
          const std::size_t bh = b * H + h;
          const real* Pbh = pp + bh * Tq * Tk;
          const real* dO = lo_.at(pg, b, h);
          const std::size_t ldo = lo_.ld;
          const real* qbh = pq ? L.q.at(pq, b, h) : nullptr;
          const std::int32_t* idx = d.rel_index(index.get(), b);
          if (dv)  // dV (Tk, hs) = P^T dO
            blas::gemm(true, false, Tk, hs, Tq, real(1), Pbh, Tk, dO, ldo, fv ? 0 : 1, L.v.at(dv, b, h), L.v.ld);
          if (dav) loops.scatter(pb + bh * Tq * nb, Pbh, idx);  // P by bucket, for da^V below
          if (!need_ds) continue;
          real* dbb = n_db ? db + bh * Tq * nb : nullptr;
          if (pav && !stacked_o) blas::gemm(false, true, Tq, nb, hs, real(1), dO, ldo, pav, hs, real(0), dbb, nb);
          // dP (Tq, Tk) = dO V^T (+ (dO a^V^T)[i, idx_ij] with a value term)
          blas::gemm(false, true, Tq, Tk, hs, real(1), dO, ldo, L.v.at(pv, b, h), L.v.ld, real(0), dS, Tk);
          if (pav) loops.gather_add(dS, dbb, idx, real(1));
          // dS = P * (dP - rowsum(dP * P)); masked entries have P = 0, so dS = 0 there.
          kernels::attention_softmax_backward_rows(dS, Pbh, 0, Tq, Tk, off, causal);
          if (dbias) {  // summed over the dims the bias is broadcast along
            real* dbias_bh = d.bias_block(dbias, b, h);
            for (std::size_t i = 0; i < Tq * Tk; ++i) dbias_bh[i] += dS[i];
          }
          const real sc = scales[h];
          if (dq)  // dQ (Tq, hs) = scale dS K
            blas::gemm(false, false, Tq, hs, Tk, sc, dS, Tk, L.k.at(pk, b, h), L.k.ld, fq ? 0 : 1, L.q.at(dq, b, h),
                       L.q.ld);
          if (dk)  // dK (Tk, hs) = scale dS^T Q
            blas::gemm(true, false, Tk, hs, Tq, sc, dS, Tk, qbh, L.q.ld, fk ? 0 : 1, L.k.at(dk, b, h), L.k.ld);
          if (key_grads) {  // dSB (Tq, nb) = dS by bucket
            loops.scatter(dbb, dS, idx);
            if (dq)  // dQ += scale dSB a^K
              blas::gemm(false, false, Tq, hs, nb, sc, dbb, nb, pak, hs, real(1), L.q.at(dq, b, h), L.q.ld);
            if (dak)  // scale dSB for da^K below
              for (std::size_t i = 0; i < Tq * nb; ++i) dbb[i] *= sc;
          }
        }
    });
    // da^V (nb, hs) += PB^T dO and da^K (nb, hs) += (scale dSB)^T Q, summed over every block's rows.
    if (dav) {
      if (stacked_o)
        blas::gemm(true, false, nb, hs, rows, real(1), pb, nb, pg, hs, real(1), dav, hs);
      else
        for (std::size_t bh = 0; bh < blocks; ++bh)
          blas::gemm(true, false, nb, hs, Tq, real(1), pb + bh * Tq * nb, nb, lo_.at(pg, bh / H, bh % H), lo_.ld,
                     real(1), dav, hs);
    }
    if (dak && key_grads) {
      if (stacked_q)
        blas::gemm(true, false, nb, hs, rows, real(1), db, nb, pq, hs, real(1), dak, hs);
      else
        for (std::size_t bh = 0; bh < blocks; ++bh)
          blas::gemm(true, false, nb, hs, Tq, real(1), db + bh * Tq * nb, nb, L.q.at(pq, bh / H, bh % H), L.q.ld,
                     real(1), dak, hs);
    }
  };
  // Plain attention records four inputs (no relative terms): its node fits the tape's inline lists.
  const bool with_rel = rel_k.defined() || rel_v.defined();
  if (packed) {
    if (with_rel)
      tape.record(kAttentionOp, out, {q_in, bias, rel_k, rel_v}, {save_q, save_rk, save_rv}, std::move(backward));
    else
      tape.record(kAttentionOp, out, {q_in, bias}, {save_q}, std::move(backward));
  } else if (with_rel) {
    tape.record(kAttentionOp, out, {q_in, k_in, v_in, bias, rel_k, rel_v}, {save_q, save_k, save_v, save_rk, save_rv},
                std::move(backward));
  } else {
    tape.record(kAttentionOp, out, {q_in, k_in, v_in, bias}, {save_q, save_k, save_v}, std::move(backward));
  }
  return out;
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const AttnDims d = detail::attention_dims(q, k, v, opt);
  Layouts L;
  L.q = L.out = HeadLayout::split(d.H, d.Tq, d.hs);
  L.k = L.v = HeadLayout::split(d.H, d.Tk, d.hs);
  return attention_core(q, k, v, false, detail::empty(q.shape()), d, L, opt);
}

Tensor attention_packed(const Tensor& qkv, std::size_t n_heads, const AttentionOptions& opt) {
  const AttnDims d = detail::attention_packed_dims(qkv, n_heads, opt);
  const std::size_t C = d.H * d.hs, T = d.Tq;
  Layouts L;
  L.q = HeadLayout::merged(T, 3 * C, 0, d.hs);
  L.k = HeadLayout::merged(T, 3 * C, C, d.hs);
  L.v = HeadLayout::merged(T, 3 * C, 2 * C, d.hs);
  L.out = HeadLayout::merged(T, C, 0, d.hs);
  return attention_core(qkv, qkv, qkv, true, detail::empty({d.B, T, C}), d, L, opt);
}

}  // namespace pelab
