// A naive attention built from separately tested ops, materialising everything the fused core avoids:
// the logits, and the relative terms as (B or 1, 1, Tq, Tk, hs) tables broadcast against q and P to
// (B, H, Tq, Tk, hs). Its gradients come from the tape. tests/core (double) and tests/core_f32 (float)
// compare the fused attention against it, forward and every gradient.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "core/ops/attention.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/embedding.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/softmax.hpp"

namespace pelab::test {

inline Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const std::size_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2), hs = q.size(3);
  const std::size_t rows = opt.rel.index ? opt.rel.index->shape()[0] : 0;
  Tensor logits = matmul(q, k, false, true);  // (B, H, Tq, Tk)
  if (opt.rel.key.defined()) {                // + q_i . a^K[idx_ij]
    const Tensor ak = reshape(embedding(opt.rel.key, *opt.rel.index), {rows, 1, Tq, Tk, hs});
    logits = logits + sum(mul(reshape(q, {B, H, Tq, 1, hs}), ak), {4});
  }
  std::vector<real> sc(H);
  for (std::size_t h = 0; h < H; ++h)
    sc[h] = !opt.head_scale.empty() ? opt.head_scale[h] : opt.scale >= 0 ? opt.scale : real(1) / std::sqrt(real(hs));
  logits = mul(logits, Tensor::from({1, H, 1, 1}, sc));
  if (opt.bias.defined()) logits = logits + opt.bias;
  if (opt.causal) {
    Array mask = xt::zeros<real>({std::size_t(1), std::size_t(1), Tq, Tk});
    for (std::size_t i = 0; i < Tq; ++i)
      for (std::size_t j = i + (Tk - Tq) + 1; j < Tk; ++j) mask(0, 0, i, j) = -std::numeric_limits<real>::infinity();
    logits = logits + Tensor(mask);
  }
  const Tensor P = softmax(logits);
  Tensor out = matmul(P, v);
  if (opt.rel.value.defined()) {  // + sum_j P_ij a^V[idx_ij]
    const Tensor av = reshape(embedding(opt.rel.value, *opt.rel.index), {rows, 1, Tq, Tk, hs});
    out = out + sum(mul(reshape(P, {B, H, Tq, Tk, 1}), av), {3});
  }
  return out;
}

// Shaw et al.'s buckets: clip(p_j - p_i, -clip, clip) + clip for positions (rows, T) (Tq = Tk = T,
// or the last Tq queries when tq < T). mirror: clip - clip(p_j - p_i, ...) instead, so causal pairs use
// buckets [clip, 2 clip] (none below clip: the kernel's bucket range starts above 0).
inline std::shared_ptr<const IndexArray> shaw_index(const IndexArray& positions, std::size_t tq, int clip,
                                                    bool mirror = false) {
  const std::size_t rows = positions.shape()[0], T = positions.shape()[1];
  auto idx = std::make_shared<IndexArray>(IndexArray::shape_type{rows, tq, T});
  for (std::size_t b = 0; b < rows; ++b)
    for (std::size_t i = 0; i < tq; ++i)
      for (std::size_t j = 0; j < T; ++j) {
        const int d = positions(b, j) - positions(b, T - tq + i);
        const int c = std::max(-clip, std::min(clip, d));
        (*idx)(b, i, j) = mirror ? clip - c : c + clip;
      }
  return idx;
}

}  // namespace pelab::test
