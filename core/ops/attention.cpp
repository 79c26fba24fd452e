// Fused attention core: forward and backward side by side. Each (batch, head) block is two GEMMs
// forward (S = q k^T, O = P v) with a row softmax on S in between while it is hot in cache, and four
// GEMMs backward. P is kept for backward; logits are not. Without a tape, query rows stream in tiles
// (forward_tiles) and neither is kept.
// Relative keys/values (Shaw) add per block a gather of q a^K^T into the logits and a scatter of P into
// buckets then one GEMM with a^V; backward mirrors them and rebuilds the scattered probabilities from
// P instead of keeping them. The products with a shared table on the right, q a^K^T and dO a^V^T, run
// as one GEMM over all blocks stacked (B H Tq, hs): measured faster than per block at R <= 64 buckets; the
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
#include "core/ops/stick_breaking.hpp"
#include "core/parallel.hpp"

namespace pelab {

namespace {

using detail::AttnDims;
using detail::kAttentionOp;

constexpr std::size_t kQueryTile = kAttentionQueryTile;  // query rows per tile of forward_tiles

std::size_t keep_probs_bytes = kKeepProbsBytes;  // detail::set_keep_probs_bytes (tests)

// The relative terms' bucket loops over one (batch, head) block. M (Tq, Tk) are logits, probabilities
// or their gradients; the block's bucket matrix A (Tq, buckets) covers buckets [lo, lo + buckets); idx (Tq, Tk)
// is the block's index table. Only the visible keys of each row are touched (masked entries of P and
// dS are exactly 0, so skipping them changes nothing).
struct BucketLoops {
  std::size_t Tq, Tk, buckets, key_offset;  // buckets [lo, lo + buckets); causal row i sees keys <= i + key_offset
  std::int32_t lo;
  bool causal;
  std::size_t visible(std::size_t i) const { return causal ? i + key_offset + 1 : Tk; }
  // M_ij += scale A[i, idx_ij]   (the key term into the logits; the value term into dP). M and A are
  // distinct buffers: saying so (restrict) lets the compiler vectorize the loop with gathers.
  void gather_add(real* __restrict M, const real* __restrict A, const std::int32_t* idx, real scale) const {
    for (std::size_t i = 0; i < Tq; ++i) {
      real* __restrict m = M + i * Tk;
      const real* __restrict a = A + i * buckets;  // a[c - lo] for bucket c
      const std::int32_t* ix = idx + i * Tk;
      for (std::size_t j = 0, n = visible(i); j < n; ++j) m[j] += scale * a[ix[j] - lo];
    }
  }
  // A[i, c] = sum of M_ij over the visible j with idx_ij = c   (P, or dS, by bucket).
  // Neighbouring keys often share a bucket (all keys past Shaw's clip distance; T5's wide far
  // buckets): runs are summed in a register, since adding each into memory would chain every add on
  // the previous store.
  void scatter(real* __restrict A, const real* __restrict M, const std::int32_t* idx) const {
    std::fill(A, A + Tq * buckets, real(0));
    for (std::size_t i = 0; i < Tq; ++i) {
      const real* m = M + i * Tk;
      real* a = A + i * buckets;
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
struct HeadBlocks {
  std::size_t offset = 0, batch_stride = 0, head_stride = 0, ld = 0;
  static HeadBlocks split(std::size_t H, std::size_t T, std::size_t hs) { return {0, H * T * hs, T * hs, hs}; }
  static HeadBlocks merged(std::size_t T, std::size_t width, std::size_t offset, std::size_t hs) {
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

// Where q, k, v and the output of every (batch, head) block live (all four may be one buffer: packed).
struct Operands {
  HeadBlocks q, k, v, out;
};

// One attention call: what its forward and backward share, fixed when the call is made.
struct AttnCall {
  AttnDims d;
  Operands at;
  BucketLoops bucket_loops;                  // the relative terms' gathers and scatters
  std::shared_ptr<const IndexArray> index;   // (1 or B, Tq, Tk) bucket of each pair, or null
  std::vector<real> scales;                  // (H,) logit scale per head
  Normalizer normalizer = Normalizer::softmax;
  bool attend_current = false;               // stick-breaking: the diagonal counts
  std::size_t window = 0;                    // sliding window (0: none)
  std::size_t chunk = 0;                     // chunked local attention (0: none)
  bool packed = false, rel_keys = false, rel_values = false;
  bool stacked_q = false, stacked_out = false;  // q / the output form one (B H Tq, hs) matrix
  std::size_t block_grain = 1;               // (batch, head) blocks worth a piece (core/parallel.hpp)
  std::size_t blocks() const { return d.B * d.H; }
  std::size_t rows() const { return d.B * d.H * d.Tq; }  // every block's query rows, stacked
};

AttnCall make_call(const AttnDims& d, const Operands& at, bool packed, const AttentionOptions& opt) {
  AttnCall c;
  c.d = d;
  c.at = at;
  c.packed = packed;
  c.normalizer = opt.normalizer;
  c.attend_current = opt.attend_current;
  c.window = opt.window;
  c.chunk = opt.chunk;
  c.rel_keys = opt.rel.key.defined() && d.rel_buckets > 0;
  c.rel_values = opt.rel.value.defined() && d.rel_buckets > 0;
  c.index = opt.rel.index;
  c.stacked_q = at.q.stacked(d.H, d.Tq, d.hs);
  c.stacked_out = at.out.stacked(d.H, d.Tq, d.hv);
  c.bucket_loops = BucketLoops{d.Tq, d.Tk, d.rel_buckets, d.key_offset, d.rel_lo, opt.causal};
  c.block_grain = std::max<std::size_t>(1, detail::kParallelWork / (d.Tq * d.Tk * 4));
  c.scales.resize(d.H);
  for (std::size_t h = 0; h < d.H; ++h)
    c.scales[h] = !opt.head_scale.empty() ? opt.head_scale[h]
                  : opt.scale >= real(0)  ? opt.scale
                                          : real(1) / std::sqrt(real(d.hv));  // v's: q, k may be wider
  return c;
}

// Logits S (rows, Tk) -> weights, in place (the bias added first): a whole block (rows = Tq), or a tile of
// it whose causal offset is `off` (forward_tiles). Z: where stick-breaking keeps its logits for backward
// (null: not kept).
// `scale`: the factor scores() left to apply (softmax only; 1 otherwise).
void normalize_rows(const AttnCall& c, real* S, const real* bias, real* Z, std::size_t rows, std::size_t off,
                    real scale = 1) {
  if (c.normalizer == Normalizer::stick_breaking)
    detail::stick_breaking_rows(S, bias, Z, 0, rows, c.d.Tk, off, c.attend_current, c.window, c.chunk);
  else
    kernels::attention_softmax_rows(S, bias, 0, rows, c.d.Tk, off, c.bucket_loops.causal, c.window, c.chunk, scale);
}

void normalize_block(const AttnCall& c, real* S, const real* bias, real* Z, real scale = 1) {
  normalize_rows(c, S, bias, Z, c.d.Tq, c.bucket_loops.key_offset, scale);
}

// S (rows, cols; row stride Tk) = scale_h q k^T of one block or tile of head h. Returns the factor the
// softmax still applies: the libxsmm path's separate pass of C *= scale moves into the softmax's first
// pass (blas::gemm_defer_alpha; the same bits). Not with a relative key term, added to the scaled
// logits before the softmax, nor with stick-breaking.
real scores(const AttnCall& c, std::size_t h, std::size_t rows, std::size_t cols, const real* q, const real* k,
            real* S) {
  if (c.normalizer == Normalizer::softmax && !c.rel_keys)
    return blas::gemm_defer_alpha(false, true, rows, cols, c.d.hs, c.scales[h], q, c.at.q.ld, k, c.at.k.ld, S, c.d.Tk);
  blas::gemm(false, true, rows, cols, c.d.hs, c.scales[h], q, c.at.q.ld, k, c.at.k.ld, real(0), S, c.d.Tk);
  return 1;
}

// dP (Tq, Tk) of one block -> dS, in place (the normalizer's backward; P its weights, Z its saved logits).
void normalize_block_backward(const AttnCall& c, real* dS, const real* P, const real* Z) {
  const BucketLoops& loops = c.bucket_loops;
  if (c.normalizer == Normalizer::stick_breaking)
    detail::stick_breaking_backward_rows(dS, P, Z, 0, c.d.Tq, c.d.Tk, loops.key_offset, c.attend_current, c.window,
                                         c.chunk);
  else  // dS = P * (dP - rowsum(dP * P)); masked entries have P = 0, so dS = 0 there.
    kernels::attention_softmax_backward_rows(dS, P, 0, c.d.Tq, c.d.Tk, loops.key_offset, loops.causal);
}

// Forward over every (batch, head) block: P (B, H, Tq, Tk) gets the probabilities, out the output.
// rel_k / rel_v point at rows [lo, lo + buckets) of a^K / a^V (null without that term). Z (B, H, Tq, Tk):
// stick-breaking's logits for backward, or null. per_worker: P (and Z) hold one (Tq, Tk) block per worker
// instead, overwritten block after block (backward recomputes them: recompute_block).
void forward_blocks(const AttnCall& c, const real* pq, const real* pk, const real* pv, const real* pbias,
                    const real* rel_k, const real* rel_v, real* P, real* Z, real* out, bool per_worker = false) {
  const AttnDims& d = c.d;
  const std::size_t H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs, hv = d.hv, R = d.rel_buckets;  // R: buckets in use
  const BucketLoops& loops = c.bucket_loops;
  // Bucket matrices (Tq, buckets) per block: q a^K^T for all blocks (each block's then holds P by
  // bucket), or one per worker for P by bucket when there is no key term.
  const std::size_t workers = parallel::workers(c.blocks(), c.block_grain);
  Array buckets(Shape{c.rel_keys ? c.rows() * R : c.rel_values ? workers * Tq * R : 0});
  real* pbk = buckets.data();
  const bool stacked_q = c.stacked_q;
  if (c.rel_keys && stacked_q) blas::gemm(false, true, c.rows(), R, hs, real(1), pq, hs, rel_k, hs, real(0), pbk, R);
  parallel::for_range(c.blocks(), c.block_grain, [&](std::size_t worker, std::size_t bh0, std::size_t bh1) {
    for (std::size_t bh = bh0; bh < bh1; ++bh) {
      const std::size_t b = bh / H, h = bh % H;
      const std::size_t at = (per_worker ? worker : bh) * Tq * Tk;  // this block's P (and Z)
      real* S = P + at;
      real* blk = c.rel_keys ? pbk + bh * Tq * R : pbk + worker * Tq * R;
      const real* qbh = c.at.q.at(pq, b, h);
      real* obh = c.at.out.at(out, b, h);
      const std::int32_t* idx = d.rel_index(c.index.get(), b);
      if (c.rel_keys && !stacked_q) blas::gemm(false, true, Tq, R, hs, real(1), qbh, c.at.q.ld, rel_k, hs, real(0), blk, R);
      // S (Tq, Tk) = scale_h * (q k^T + (q a^K^T)[i, idx_ij]), then + bias and the masked softmax
      const real to_apply = scores(c, h, Tq, Tk, qbh, c.at.k.at(pk, b, h), S);
      if (c.rel_keys) loops.gather_add(S, blk, idx, c.scales[h]);
      normalize_block(c, S, d.bias_block(pbias, b, h), Z ? Z + at : nullptr, to_apply);
      // O (Tq, hs) = P v (+ PB a^V, PB = P by bucket)
      blas::gemm(false, false, Tq, hv, Tk, real(1), S, Tk, c.at.v.at(pv, b, h), c.at.v.ld, real(0), obh, c.at.out.ld);
      if (c.rel_values) {
        loops.scatter(blk, S, idx);
        blas::gemm(false, false, Tq, hv, R, real(1), blk, R, rel_v, hv, real(1), obh, c.at.out.ld);
      }
    }
  });
}

// Forward without a tape (evaluation, prediction): forward_blocks' arithmetic, but query rows run in
// tiles of kQueryTile with a per-worker (tile, Tk) scratch, so (B, H, Tq, Tk) never exists: memory
// grows with T, not T^2. A causal tile computes only the keys its last row sees (`cols`): half the
// work of the full block, whose masked weights are exactly 0 anyway. The sums are the same products,
// but a BLAS kernel may group them differently for another shape, so the result agrees with
// forward_blocks to float rounding, not bit for bit (tests/core_f32/test_attention_streaming.cpp).
// The tile is a constant and every output row is one unit of work: the result depends on neither the
// thread count nor the batch around a row.
void forward_tiles(const AttnCall& c, const real* pq, const real* pk, const real* pv, const real* pbias,
                   const real* rel_k, const real* rel_v, real* out) {
  const AttnDims& d = c.d;
  const std::size_t H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs, hv = d.hv, R = d.rel_buckets;
  const std::size_t tiles = (Tq + kQueryTile - 1) / kQueryTile, units = c.blocks() * tiles;
  const std::size_t grain = std::max<std::size_t>(1, detail::kParallelWork / (kQueryTile * Tk * 4));
  const std::size_t workers = parallel::workers(units, grain), per_worker = kQueryTile * (Tk + R);
  Array scratch(Shape{workers * per_worker});
  parallel::for_range(units, grain, [&](std::size_t worker, std::size_t u0, std::size_t u1) {
    real* S = scratch.data() + worker * per_worker;  // (tile, Tk) logits, then weights
    real* blk = S + kQueryTile * Tk;                 // (tile, R) q a^K^T, then P by bucket
    for (std::size_t u = u0; u < u1; ++u) {
      const std::size_t bh = u / tiles, b = bh / H, h = bh % H;
      const std::size_t i0 = (u % tiles) * kQueryTile, rows = std::min(kQueryTile, Tq - i0);
      // The tile's bucket loops: rows [0, rows), the causal offset moved by i0.
      BucketLoops loops = c.bucket_loops;
      loops.Tq = rows;
      loops.key_offset += i0;
      const std::size_t cols = loops.causal ? std::min(Tk, loops.visible(rows - 1)) : Tk;  // keys the tile sees
      const real* qbh = c.at.q.at(pq, b, h) + i0 * c.at.q.ld;
      real* obh = c.at.out.at(out, b, h) + i0 * c.at.out.ld;
      const std::int32_t* idx = d.rel_index(c.index.get(), b);
      if (idx) idx += i0 * Tk;
      const real* bias = d.bias_block(pbias, b, h);
      if (bias) bias += i0 * Tk;
      const real to_apply = scores(c, h, rows, cols, qbh, c.at.k.at(pk, b, h), S);
      if (c.rel_keys) {
        blas::gemm(false, true, rows, R, hs, real(1), qbh, c.at.q.ld, rel_k, hs, real(0), blk, R);
        loops.gather_add(S, blk, idx, c.scales[h]);
      }
      normalize_rows(c, S, bias, nullptr, rows, loops.key_offset, to_apply);  // every column written (0 past the keys)
      blas::gemm(false, false, rows, hv, cols, real(1), S, Tk, c.at.v.at(pv, b, h), c.at.v.ld, real(0), obh, c.at.out.ld);
      if (c.rel_values) {
        loops.scatter(blk, S, idx);
        blas::gemm(false, false, rows, hv, R, real(1), blk, R, rel_v, hv, real(1), obh, c.at.out.ld);
      }
    }
  });
}

// Attention's tape node by name. Its input and saved lists differ by variant: q, k and v separate or
// one packed qkv (then q = k = v name one slot); relative tables a^K, a^V or none; probabilities kept
// or recomputed (then the bias's value is saved and the relative tables never are). The forward builds
// both lists from these slots (node_list) and the backward reads them back by the same names
// (backward_io). kNone: not in that list.
struct TapeSlots {
  static constexpr std::size_t kNone = ~std::size_t(0);
  struct Names {
    std::size_t q = kNone, k = kNone, v = kNone, bias = kNone, rel_k = kNone, rel_v = kNone;
  };
  Names input;  // gradient targets: q, k, v, bias, a^K, a^V
  Names saved;  // the values backward reads: q, k, v (null where unread); the bias or a^K, a^V
  std::size_t n_inputs = 0, n_saved = 0;
};

// Slots q, k and v from `next` on: three, or one when packed.
void place_qkv(TapeSlots::Names& n, bool packed, std::size_t& next) {
  n.q = next++;
  n.k = packed ? n.q : next++;
  n.v = packed ? n.q : next++;
}

// inputs {q[, k, v], bias[, a^K, a^V]}, saved {q[, k, v][, bias][, a^K, a^V]}. Plain attention has four
// inputs: its node fits the tape's inline lists.
TapeSlots tape_slots(bool packed, bool with_rel, bool recompute) {
  const bool rel = with_rel && !recompute;  // a recomputing node never records relative tables
  TapeSlots s;
  place_qkv(s.input, packed, s.n_inputs);
  s.input.bias = s.n_inputs++;
  place_qkv(s.saved, packed, s.n_saved);
  if (recompute) s.saved.bias = s.n_saved++;  // its value is read only to recompute P
  if (rel) {
    s.input.rel_k = s.n_inputs++, s.input.rel_v = s.n_inputs++;
    s.saved.rel_k = s.n_saved++, s.saved.rel_v = s.n_saved++;
  }
  return s;
}

// The tensors of one node by name, in the order `names` gives (n of them).
struct NodeTensors {
  Tensor q, k, v, bias, rel_k, rel_v;
};
std::vector<Tensor> node_list(const TapeSlots::Names& names, std::size_t n, const NodeTensors& t) {
  std::vector<Tensor> list(n);
  auto put = [&list](std::size_t slot, const Tensor& x) {
    if (slot != TapeSlots::kNone) list[slot] = x;
  };
  put(names.q, t.q), put(names.k, t.k), put(names.v, t.v), put(names.bias, t.bias);
  put(names.rel_k, t.rel_k), put(names.rel_v, t.rel_v);
  return list;
}

// What backward reads and writes (null: not saved, or no gradient wanted). rel_* point at rows
// [lo, lo + buckets) of a^K, a^V and their gradients.
struct BackwardIO {
  const real *q = nullptr, *k = nullptr, *v = nullptr, *P = nullptr, *Z = nullptr, *dout = nullptr;
  const real* bias = nullptr;  // its value: saved only to recompute P (recompute)
  bool recompute = false;      // P and Z were not kept: each block's is recomputed (recompute_block)
  const real *rel_k = nullptr, *rel_v = nullptr;
  real *dq = nullptr, *dk = nullptr, *dv = nullptr, *dbias = nullptr, *drel_k = nullptr, *drel_v = nullptr;
  bool fresh_q = false, fresh_k = false, fresh_v = false;  // written with beta 0 (a fresh buffer)
  bool need_ds = false;    // dS is needed (for dq, dk, dbias or da^K)
  bool key_grads = false;  // dS by bucket is needed (for dq and da^K with a key term)
};

// Saved value / input gradient of a slot; null where the slot is absent (TapeSlots::kNone).
const real* saved_at(const BackwardCtx& ctx, std::size_t slot) {
  return slot == TapeSlots::kNone ? nullptr : ctx.saved(slot);
}
real* grad_at(const BackwardCtx& ctx, std::size_t slot) { return slot == TapeSlots::kNone ? nullptr : ctx.grad(slot); }

BackwardIO backward_io(const BackwardCtx& ctx, const AttnCall& c, const TapeSlots& slots, const Array& P,
                       const Array& Z, bool need_ds, bool recompute) {
  const bool packed = c.packed, rel = c.rel_keys || c.rel_values;
  const TapeSlots::Names &in = slots.input, &saved = slots.saved;
  // rows [lo, lo + buckets) of a^K (R, hs) and a^V (R, hv)
  const std::size_t shift = std::size_t(c.d.rel_lo) * c.d.hs, shift_v = std::size_t(c.d.rel_lo) * c.d.hv;
  BackwardIO io;
  io.q = ctx.saved(saved.q), io.k = ctx.saved(saved.k), io.v = ctx.saved(saved.v), io.P = P.data();
  io.Z = Z.size() ? Z.data() : nullptr;
  io.recompute = recompute;
  if (recompute) io.P = io.Z = nullptr, io.bias = saved_at(ctx, saved.bias);
  const real *rel_k = rel ? saved_at(ctx, saved.rel_k) : nullptr, *rel_v = rel ? saved_at(ctx, saved.rel_v) : nullptr;
  io.rel_k = rel_k ? rel_k + shift : nullptr;
  io.rel_v = rel_v ? rel_v + shift_v : nullptr;
  io.dout = ctx.grad_out().data();
  // Gradients of q, k and v, each block's written by its GEMMs (beta 0 into a fresh buffer). Packed:
  // one buffer, every element of it written by exactly one of the three. Inputs that are one tensor
  // (attention(x, x, x)) accumulate into a zeroed buffer instead.
  if (packed) {
    io.dq = io.dk = io.dv = ctx.grad_write(in.q, io.fresh_q);
    io.fresh_k = io.fresh_v = io.fresh_q;
  } else if (ctx.same_input(in.q, in.k) || ctx.same_input(in.q, in.v) || ctx.same_input(in.k, in.v)) {
    io.dq = ctx.grad(in.q), io.dk = ctx.grad(in.k), io.dv = ctx.grad(in.v);
  } else {
    io.dq = ctx.grad_write(in.q, io.fresh_q), io.dk = ctx.grad_write(in.k, io.fresh_k);
    io.dv = ctx.grad_write(in.v, io.fresh_v);
  }
  if (packed && !io.dq) io.dk = io.dv = nullptr;
  io.dbias = ctx.grad(in.bias);
  real *drel_k = rel ? grad_at(ctx, in.rel_k) : nullptr, *drel_v = rel ? grad_at(ctx, in.rel_v) : nullptr;
  io.drel_k = drel_k ? drel_k + shift : nullptr;
  io.drel_v = drel_v ? drel_v + shift_v : nullptr;
  io.need_ds = need_ds;
  io.key_grads = need_ds && c.rel_keys && (io.dq || io.drel_k);
  return io;
}

// The forward's P (and stick-breaking's Z) of block (b, h) again, into Pbh (and Zbh), by the calls
// forward_blocks made for it (no relative terms): the same bits.
void recompute_block(const AttnCall& c, const BackwardIO& io, std::size_t b, std::size_t h, real* Pbh, real* Zbh) {
  const AttnDims& d = c.d;
  const Operands& at = c.at;
  const real to_apply = scores(c, h, d.Tq, d.Tk, at.q.at(io.q, b, h), at.k.at(io.k, b, h), Pbh);
  normalize_block(c, Pbh, d.bias_block(io.bias, b, h), Zbh, to_apply);
}

// Backward of block (b, h), whose weights are Pbh (Tq, Tk) (and stick-breaking's logits Zbh). dS
// (Tq, Tk) is the worker's scratch; dsb (Tq, buckets) the block's dO a^V^T, overwritten by dS by bucket
// (null without relative terms); pb (Tq, buckets) receives P by bucket (null unless da^V is wanted).
void backward_block(const AttnCall& c, const BackwardIO& io, std::size_t b, std::size_t h, const real* Pbh,
                    const real* Zbh, real* dS, real* dsb, real* pb) {
  const AttnDims& d = c.d;
  const std::size_t Tq = d.Tq, Tk = d.Tk, hs = d.hs, hv = d.hv, R = d.rel_buckets;
  const BucketLoops& loops = c.bucket_loops;
  const Operands& at = c.at;
  const real* dO = at.out.at(io.dout, b, h);
  const std::size_t ldo = at.out.ld;
  const real* qbh = io.q ? at.q.at(io.q, b, h) : nullptr;
  const std::int32_t* idx = d.rel_index(c.index.get(), b);
  if (io.dv)  // dV (Tk, hs) = P^T dO
    blas::gemm(true, false, Tk, hv, Tq, real(1), Pbh, Tk, dO, ldo, io.fresh_v ? 0 : 1, at.v.at(io.dv, b, h), at.v.ld);
  if (io.drel_v) loops.scatter(pb, Pbh, idx);  // P by bucket, for da^V
  if (!io.need_ds) return;
  if (io.rel_v && !c.stacked_out)
    blas::gemm(false, true, Tq, R, hv, real(1), dO, ldo, io.rel_v, hv, real(0), dsb, R);
  // dP (Tq, Tk) = dO V^T (+ (dO a^V^T)[i, idx_ij] with a value term)
  blas::gemm(false, true, Tq, Tk, hv, real(1), dO, ldo, at.v.at(io.v, b, h), at.v.ld, real(0), dS, Tk);
  if (io.rel_v) loops.gather_add(dS, dsb, idx, real(1));
  normalize_block_backward(c, dS, Pbh, Zbh);
  if (io.dbias) {  // summed over the dims the bias is broadcast along
    real* dbias_bh = d.bias_block(io.dbias, b, h);
    for (std::size_t i = 0; i < Tq * Tk; ++i) dbias_bh[i] += dS[i];
  }
  const real sc = c.scales[h];
  if (io.dq)  // dQ (Tq, hs) = scale dS K
    blas::gemm(false, false, Tq, hs, Tk, sc, dS, Tk, at.k.at(io.k, b, h), at.k.ld, io.fresh_q ? 0 : 1,
               at.q.at(io.dq, b, h), at.q.ld);
  if (io.dk)  // dK (Tk, hs) = scale dS^T Q
    blas::gemm(true, false, Tk, hs, Tq, sc, dS, Tk, qbh, at.q.ld, io.fresh_k ? 0 : 1, at.k.at(io.dk, b, h), at.k.ld);
  if (io.key_grads) {  // dSB (Tq, buckets) = dS by bucket
    loops.scatter(dsb, dS, idx);
    if (io.dq)  // dQ += scale dSB a^K
      blas::gemm(false, false, Tq, hs, R, sc, dsb, R, io.rel_k, hs, real(1), at.q.at(io.dq, b, h), at.q.ld);
    if (io.drel_k)  // scale dSB for da^K below
      for (std::size_t i = 0; i < Tq * R; ++i) dsb[i] *= sc;
  }
}

// da^V (buckets, hs) += PB^T dO and da^K (buckets, hs) += (scale dSB)^T Q, summed over every block's rows.
void relative_table_grads(const AttnCall& c, const BackwardIO& io, const real* dsb, const real* pb) {
  const std::size_t H = c.d.H, Tq = c.d.Tq, hs = c.d.hs, hv = c.d.hv, R = c.d.rel_buckets;
  if (io.drel_v) {
    if (c.stacked_out)
      blas::gemm(true, false, R, hv, c.rows(), real(1), pb, R, io.dout, hv, real(1), io.drel_v, hv);
    else
      for (std::size_t bh = 0; bh < c.blocks(); ++bh)
        blas::gemm(true, false, R, hv, Tq, real(1), pb + bh * Tq * R, R, c.at.out.at(io.dout, bh / H, bh % H),
                   c.at.out.ld, real(1), io.drel_v, hv);
  }
  if (io.drel_k && io.key_grads) {
    if (c.stacked_q)
      blas::gemm(true, false, R, hs, c.rows(), real(1), dsb, R, io.q, hs, real(1), io.drel_k, hs);
    else
      for (std::size_t bh = 0; bh < c.blocks(); ++bh)
        blas::gemm(true, false, R, hs, Tq, real(1), dsb + bh * Tq * R, R, c.at.q.at(io.q, bh / H, bh % H), c.at.q.ld,
                   real(1), io.drel_k, hs);
  }
}

void attention_backward(const BackwardCtx& ctx, const AttnCall& c, const TapeSlots& slots, const Array& P,
                        const Array& Z, bool need_ds, bool recompute) {
  const BackwardIO io = backward_io(ctx, c, slots, P, Z, need_ds, recompute);
  const AttnDims& d = c.d;
  const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hv = d.hv, R = d.rel_buckets, rows = c.rows();
  // Relative terms need, stacked over all blocks (rows, buckets): dO a^V^T (each block's then
  // overwritten by dS by bucket, scaled by the head's scale for da^K) and P by bucket for da^V; da^K
  // and da^V are then one GEMM each over all rows, so blocks can run on any thread.
  const std::size_t n_dsb = need_ds && (io.rel_v || io.key_grads) ? rows * R : 0, n_pb = io.drel_v ? rows * R : 0;
  Array stacked(Shape{n_dsb + n_pb});
  real *dsb = stacked.data(), *pb = dsb + n_dsb;
  if (need_ds && io.rel_v && c.stacked_out)
    blas::gemm(false, true, rows, R, hv, real(1), io.dout, hv, io.rel_v, hv, real(0), dsb, R);
  // Blocks are grouped by the bias-gradient block they add into (all blocks of a group run in order
  // in one piece): the sums keep the serial order whatever the thread count.
  const bool group_bias = io.dbias && (d.bias_batch == 1 || d.bias_heads == 1);
  const std::size_t bias_b = group_bias ? (d.bias_batch == 1 ? 1 : B) : B;
  const std::size_t bias_h = group_bias ? (d.bias_heads == 1 ? 1 : H) : H;
  const std::size_t groups = bias_b * bias_h;
  const std::size_t per_group = c.blocks() / groups;  // blocks sharing one bias-gradient block
  const std::size_t grain = std::max<std::size_t>(1, c.block_grain / per_group);
  // Per worker: dP, then dS; recomputing, the block's P (and Z) too.
  const bool recompute_z = recompute && c.normalizer == Normalizer::stick_breaking;
  const std::size_t per_worker = Tq * Tk * (std::size_t(need_ds) + std::size_t(recompute) + std::size_t(recompute_z));
  Array scratch(Shape{parallel::workers(groups, grain) * per_worker});
  parallel::for_range(groups, grain, [&](std::size_t worker, std::size_t g0, std::size_t g1) {
    real* dS = scratch.data() + worker * per_worker;
    real* Pw = recompute ? dS + (need_ds ? Tq * Tk : 0) : nullptr;
    real* Zw = recompute_z ? Pw + Tq * Tk : nullptr;
    for (std::size_t g = g0; g < g1; ++g)
      for (std::size_t m = 0; m < per_group; ++m) {
        // Group g = (gb, gh) of the bias grid; its blocks in (b, h) order.
        const std::size_t gb = g / bias_h, gh = g % bias_h, per_b = B / bias_b, per_h = H / bias_h;
        const std::size_t b = gb * per_b + m / per_h, h = gh * per_h + m % per_h, bh = b * H + h;
        if (recompute) recompute_block(c, io, b, h, Pw, Zw);
        const real* Pbh = recompute ? Pw : io.P + bh * Tq * Tk;
        const real* Zbh = recompute ? Zw : io.Z ? io.Z + bh * Tq * Tk : nullptr;
        backward_block(c, io, b, h, Pbh, Zbh, dS, n_dsb ? dsb + bh * Tq * R : nullptr, n_pb ? pb + bh * Tq * R : nullptr);
      }
  });
  relative_table_grads(c, io, dsb, pb);
}

// The attention core on raw blocks: q (B, H, Tq, hs) etc. where `at` says; q, k, v and out may share
// one buffer (packed). Records one node with inputs {q_in, k_in, v_in, bias[, a^K, a^V]}.
Tensor attention_core(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, bool packed, Tensor out,
                      const AttnDims& d, const Operands& at, const AttentionOptions& opt) {
  auto call = std::make_shared<const AttnCall>(make_call(d, at, packed, opt));
  const AttnCall& c = *call;
  const Tensor bias = opt.bias, rel_k = opt.rel.key, rel_v = opt.rel.value;
  // rows [lo, lo + buckets) of a^K (R, hs) and a^V (R, hv)
  const std::size_t shift = std::size_t(d.rel_lo) * d.hs, shift_v = std::size_t(d.rel_lo) * d.hv;
  Tape& tape = Tape::current();
  const bool record = packed ? tape.should_record({&q_in, &bias, &rel_k, &rel_v})
                             : tape.should_record({&q_in, &k_in, &v_in, &bias, &rel_k, &rel_v});
  if (!record && !opt.probs_out) {  // nothing keeps P: stream the query rows
    forward_tiles(c, q_in.data(), k_in.data(), v_in.data(), bias.defined() ? bias.data() : nullptr,
                  c.rel_keys ? rel_k.data() + shift : nullptr, c.rel_values ? rel_v.data() + shift_v : nullptr,
                  out.mutable_data());
    return out;
  }
  // Kept: (B, H, Tq, Tk) probabilities and stick-breaking's logits (its weights alone do not give them
  // back). Recomputed in backward: one (Tq, Tk) block of each per worker, overwritten block after block.
  const bool recompute = record && !opt.probs_out && !attention_keeps_probs(d.B, d.H, d.Tq, d.Tk, c.rel_keys || c.rel_values);
  const bool with_z = record && c.normalizer == Normalizer::stick_breaking;
  const std::size_t blocks = recompute ? parallel::workers(c.blocks(), c.block_grain) : c.blocks();
  auto P = std::make_shared<Array>(Shape{blocks, d.Tq, d.Tk});
  auto Z = std::make_shared<Array>(Shape{with_z ? blocks : 0, d.Tq, d.Tk});
  forward_blocks(c, q_in.data(), k_in.data(), v_in.data(), bias.defined() ? bias.data() : nullptr,
                 c.rel_keys ? rel_k.data() + shift : nullptr, c.rel_values ? rel_v.data() + shift_v : nullptr,
                 P->data(), with_z ? Z->data() : nullptr, out.mutable_data(), recompute);
  if (recompute) *P = Array(Shape{0}), *Z = Array(Shape{0});  // the forward's scratch goes now, not at backward
  else P->reshape({d.B, d.H, d.Tq, d.Tk});

  if (opt.probs_out) *opt.probs_out = record ? array_copy(*P) : std::move(*P);
  if (!record) return out;
  // What each gradient reads: dV P and dO; da^V also P (by bucket) and dO; dS (for dq, dk, dbias,
  // da^K) also v, and a^V when there is a value term; dq also k and a^K; dk and da^K also q. The
  // bias's value is read only to recompute P, and P is op-private (shared with the closure, no copy).
  // Packed, q, k and v are one tensor, saved once when any of them is read.
  const bool gq = q_in.requires_grad(), gk = k_in.requires_grad();
  const bool g_rk = c.rel_keys && rel_k.requires_grad();
  const bool need_ds = gq || gk || (bias.defined() && bias.requires_grad()) || g_rk;
  Tensor save_q = gk || g_rk || recompute ? q_in : Tensor(), save_k = gq || recompute ? k_in : Tensor();
  Tensor save_v = need_ds ? v_in : Tensor();
  if (packed) save_q = save_k = save_v = (save_q.defined() || save_k.defined() || save_v.defined()) ? q_in : Tensor();
  const Tensor save_rk = c.rel_keys && gq ? rel_k : Tensor(), save_rv = c.rel_values && need_ds ? rel_v : Tensor();
  const TapeSlots slots = tape_slots(packed, rel_k.defined() || rel_v.defined(), recompute);
  const std::vector<Tensor> inputs = node_list(slots.input, slots.n_inputs, {q_in, k_in, v_in, bias, rel_k, rel_v});
  const std::vector<Tensor> saved =
      node_list(slots.saved, slots.n_saved, {save_q, save_k, save_v, bias, save_rk, save_rv});
  tape.record(kAttentionOp, out, inputs, saved, [P, Z, call, slots, need_ds, recompute](const BackwardCtx& ctx) {
    attention_backward(ctx, *call, slots, *P, *Z, need_ds, recompute);
  });
  return out;
}

}  // namespace

bool attention_keeps_probs(std::size_t B, std::size_t H, std::size_t Tq, std::size_t Tk, bool relative) {
  return relative || B * H * Tq * Tk * sizeof(real) <= keep_probs_bytes;
}

void detail::set_keep_probs_bytes(std::size_t bytes) { keep_probs_bytes = bytes; }

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const AttnDims d = detail::attention_dims(q, k, v, opt);
  Operands at;
  at.q = HeadBlocks::split(d.H, d.Tq, d.hs);
  at.out = HeadBlocks::split(d.H, d.Tq, d.hv);
  at.k = HeadBlocks::split(d.H, d.Tk, d.hs);
  at.v = HeadBlocks::split(d.H, d.Tk, d.hv);
  return attention_core(q, k, v, false, detail::empty({d.B, d.H, d.Tq, d.hv}), d, at, opt);
}

Tensor attention_packed(const Tensor& qkv, std::size_t n_heads, const AttentionOptions& opt) {
  const AttnDims d = detail::attention_packed_dims(qkv, n_heads, opt);
  const std::size_t C = d.H * d.hs, T = d.Tq;
  Operands at;
  at.q = HeadBlocks::merged(T, 3 * C, 0, d.hs);
  at.k = HeadBlocks::merged(T, 3 * C, C, d.hs);
  at.v = HeadBlocks::merged(T, 3 * C, 2 * C, d.hs);
  at.out = HeadBlocks::merged(T, C, 0, d.hs);
  return attention_core(qkv, qkv, qkv, true, detail::empty({d.B, T, C}), d, at, opt);
}

}  // namespace pelab
