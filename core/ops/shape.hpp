// Shape ops: reshape, permute / transpose, slice, concat, broadcast_to.
// Tensors never share storage, so every op copies (in contiguous blocks wherever the layout allows).
// Kept as ops (docs/architecture.md, the op set): the primitive copies; transpose is a composite (a permute).
#pragma once

#include <cstddef>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// Same elements in row-major order under a new shape; numel must match exactly.
Tensor reshape(const Tensor& x, const Shape& shape);

// Reorders axes like torch.permute: out.shape[i] = x.shape[axes[i]]. Negative axes count from the end;
// axes must be a permutation of 0..ndim-1. Copies whole inner runs when trailing axes stay in place
// (e.g. the attention head split (B, T, H, hs) -> (B, H, T, hs)).
Tensor permute(const Tensor& x, const std::vector<int>& axes);

// Swaps axes a and b (a permute).
Tensor transpose(const Tensor& x, int a, int b);

// The range [start, stop) along axis (start <= stop <= size); the other axes are kept whole.
Tensor slice(const Tensor& x, int axis, std::size_t start, std::size_t stop);

// Joins tensors along axis; all other dims must be equal. Backward hands each input its block.
Tensor concat(const std::vector<Tensor>& xs, int axis);

// Broadcasts x to shape under NumPy rules (x right-aligned, its size-1 dims stretched, leading dims
// added). Backward sums the gradient over the broadcast axes.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace pelab
