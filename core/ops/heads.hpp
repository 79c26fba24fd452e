// Head split / merge for multi-head attention, as single copies (no reshape + permute + slice chain).
// Kept as ops (docs/architecture.md, the op set): one copy each instead of a reshape, permute and slice.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// x (B, T, n*C) holds n chunks of width C = H*hs side by side (e.g. n = 3 for a fused [q | k | v]);
// returns chunk `index` split into heads: (B, H, T, hs), head h = dims [h*hs, (h+1)*hs) of the chunk.
Tensor split_heads(const Tensor& x, std::size_t n_heads, std::size_t n_chunks = 1, std::size_t index = 0);

// Inverse of split_heads with one chunk: (B, H, T, hs) -> (B, T, H*hs).
Tensor merge_heads(const Tensor& x);

}  // namespace pelab
