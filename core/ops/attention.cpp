// Fused attention core: forward and backward side by side. Each (batch, head) block is two GEMMs
// forward (S = q k^T, O = P v) with a row softmax on S in between while it is hot in cache, and four
// GEMMs backward. P is kept for backward; logits are not.
#include "core/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/blas.hpp"
#include "core/ops/common.hpp"
#include "core/ops/fast_math.hpp"

namespace pelab {

namespace {

constexpr const char* kOp = "attention";

using detail::exp_nonpos;

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

struct AttnDims {
  std::size_t B = 0, H = 0, Tq = 0, Tk = 0, hs = 0;
  std::size_t bias_heads = 0;  // 0 (no bias), 1 (shared by heads) or H
};

AttnDims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  detail::require_defined(q, kOp, "q");
  detail::require_defined(k, kOp, "k");
  detail::require_defined(v, kOp, "v");
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const std::string shapes = " (q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " + shape_str(vs) + ")";
  detail::require(qs.size() == 4 && ks.size() == 4 && vs.size() == 4, kOp,
                  "q, k and v must be 4-D (B, H, T, hs)" + shapes);
  detail::require(qs[0] == ks[0] && qs[1] == ks[1] && qs[3] == ks[3], kOp,
                  "q and k differ in batch, heads or head size" + shapes);
  detail::require(ks == vs, kOp, "k and v must have the same shape" + shapes);
  AttnDims d;
  d.B = qs[0];
  d.H = qs[1];
  d.Tq = qs[2];
  d.Tk = ks[2];
  d.hs = qs[3];
  detail::require(d.Tk > 0 && d.hs > 0, kOp, "need at least one key and a non-empty head size" + shapes);
  detail::require(!opt.causal || d.Tq <= d.Tk, kOp,
                  "causal attention needs Tq <= Tk (query i sees keys j <= i + Tk - Tq)" + shapes);
  if (opt.bias.defined()) {
    const Shape& bs = opt.bias.shape();
    detail::require(bs.size() == 3 && (bs[0] == d.H || bs[0] == 1) && bs[1] == d.Tq && bs[2] == d.Tk, kOp,
                    "bias " + shape_str(bs) + " must be (H or 1, Tq, Tk) = (" + std::to_string(d.H) + " or 1, " +
                        std::to_string(d.Tq) + ", " + std::to_string(d.Tk) + ")" + shapes);
    d.bias_heads = bs[0];
  }
  detail::require(opt.head_scale.empty() || opt.head_scale.size() == d.H, kOp,
                  "head_scale has " + std::to_string(opt.head_scale.size()) + " entries for " +
                      std::to_string(d.H) + " heads" + shapes);
  return d;
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const AttnDims d = attention_dims(q, k, v, opt);
  const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs;
  const std::size_t off = Tk - Tq;  // causal: row i sees keys [0, i + off]
  const bool causal = opt.causal;
  const Tensor bias = opt.bias;

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
    real *pp = P->data(), *po = out.mutable_data();
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t bh = b * H + h;
        real* S = pp + bh * Tq * Tk;
        // S (Tq, Tk) = scale_h * q k^T
        blas::gemm(false, true, Tq, Tk, hs, scales[h], pq + bh * Tq * hs, hs, pk + bh * Tk * hs, hs, real(0), S, Tk);
        const real* bh_bias = pbias ? pbias + (d.bias_heads == 1 ? 0 : h) * Tq * Tk : nullptr;
        for (std::size_t i = 0; i < Tq; ++i) {
          real* s = S + i * Tk;
          const std::size_t n = causal ? i + off + 1 : Tk;  // visible keys
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
        // O (Tq, hs) = P v
        blas::gemm(false, false, Tq, hs, Tk, real(1), S, Tk, pv + bh * Tk * hs, hs, real(0), po + bh * Tq * hs, hs);
      }
  }

  Tape& tape = Tape::current();
  const bool record = tape.should_record({&q, &k, &v, &bias});
  if (opt.probs_out) *opt.probs_out = record ? Array(*P) : std::move(*P);
  if (record) {
    // What each gradient reads: dV P and dO; dS (for dQ, dK, dbias) also V; dQ also K; dK also Q.
    // The bias's value is never read, and P is op-private (shared with the closure, no copy).
    const bool gq = q.requires_grad(), gk = k.requires_grad();
    const bool need_ds = gq || gk || (bias.defined() && bias.requires_grad());
    const Tensor save_q = gk ? q : Tensor(), save_k = gq ? k : Tensor(), save_v = need_ds ? v : Tensor();
    auto backward = [P, d, scales, causal, off, need_ds](const BackwardCtx& c) {
      const std::size_t B = d.B, H = d.H, Tq = d.Tq, Tk = d.Tk, hs = d.hs;
      const real *pq = c.saved(0), *pk = c.saved(1), *pv = c.saved(2), *pp = P->data();
      const real* pg = c.grad_out().data();
      real* dq = c.grad(0);
      real* dk = c.grad(1);
      real* dv = c.grad(2);
      real* dbias = c.grad(3);
      std::vector<real> scratch(need_ds ? Tq * Tk : 0);  // dP, then dS in place; reused across heads
      real* dS = scratch.data();
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
          const std::size_t bh = b * H + h;
          const real *Pbh = pp + bh * Tq * Tk, *dO = pg + bh * Tq * hs;
          if (dv)  // dV (Tk, hs) += P^T dO
            blas::gemm(true, false, Tk, hs, Tq, real(1), Pbh, Tk, dO, hs, real(1), dv + bh * Tk * hs, hs);
          if (!need_ds) continue;
          // dP (Tq, Tk) = dO V^T
          blas::gemm(false, true, Tq, Tk, hs, real(1), dO, hs, pv + bh * Tk * hs, hs, real(0), dS, Tk);
          // dS = P * (dP - rowsum(dP * P)); masked entries have P = 0, so dS = 0 there.
          for (std::size_t i = 0; i < Tq; ++i) {
            real* s = dS + i * Tk;
            const real* p = Pbh + i * Tk;
            const std::size_t n = causal ? i + off + 1 : Tk;
            const real dot = row_dot(s, p, n);
            for (std::size_t j = 0; j < n; ++j) s[j] = p[j] * (s[j] - dot);
            std::fill(s + n, s + Tk, real(0));
          }
          if (dbias) {  // dbias[h or 0] += dS, summed over the batch
            real* db = dbias + (d.bias_heads == 1 ? 0 : h) * Tq * Tk;
            for (std::size_t i = 0; i < Tq * Tk; ++i) db[i] += dS[i];
          }
          const real sc = scales[h];
          if (dq)  // dQ (Tq, hs) += scale dS K
            blas::gemm(false, false, Tq, hs, Tk, sc, dS, Tk, pk + bh * Tk * hs, hs, real(1), dq + bh * Tq * hs, hs);
          if (dk)  // dK (Tk, hs) += scale dS^T Q
            blas::gemm(true, false, Tk, hs, Tq, sc, dS, Tk, pq + bh * Tq * hs, hs, real(1), dk + bh * Tk * hs, hs);
        }
    };
    tape.record(kOp, out, {q, k, v, bias}, {save_q, save_k, save_v}, std::move(backward));
  }
  return out;
}

}  // namespace pelab
