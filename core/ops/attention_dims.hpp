// attention's argument checks and the block offsets derived from them (internal to core/ops).
#pragma once

#include <cstdint>

#include "core/ops/attention.hpp"

namespace pelab::detail {

constexpr const char* kAttentionOp = "attention";

struct AttnDims {
  std::size_t B = 0, H = 0, Tq = 0, Tk = 0, hs = 0;
  std::size_t hv = 0;  // v's (and the output's) head size: hs, unless q and k are wider (PoPE: 2 hs)
  std::size_t key_offset = 0;  // causal: query i sees keys j <= i + key_offset (AttentionOptions::query_offset)
  std::size_t bias_batch = 0, bias_heads = 0;  // the bias's first two dims (1 = broadcast); 0: no bias
  std::size_t rel_rows = 0;                    // index table rows: 1 (shared by the batch) or B
  std::size_t rel_buckets = 0;                 // buckets [rel_lo, rel_lo + rel_buckets) hold every visible pair
  std::int32_t rel_lo = 0;

  // The (Tq, Tk) block of the bias that batch b, head h reads (broadcast dims repeat block 0).
  template <class T>
  T* bias_block(T* bias, std::size_t b, std::size_t h) const {
    if (!bias) return nullptr;
    return bias + ((bias_batch == 1 ? 0 : b) * bias_heads + (bias_heads == 1 ? 0 : h)) * Tq * Tk;
  }
  // Batch b's (Tq, Tk) index table, or nullptr without relative terms.
  const std::int32_t* rel_index(const IndexArray* index, std::size_t b) const {
    return index ? index->data() + (rel_rows == 1 ? 0 : b) * Tq * Tk : nullptr;
  }
};

// Checks every argument (shapes, options, and the buckets of the pairs each query sees) and returns
// the dimensions; throws Error naming "attention" and the offending shapes or entry.
AttnDims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt);
// The same for attention_packed: qkv (B, T, 3C), C = n_heads * hs; Tq = Tk = T.
AttnDims attention_packed_dims(const Tensor& qkv, std::size_t n_heads, const AttentionOptions& opt);

}  // namespace pelab::detail
