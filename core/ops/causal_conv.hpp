// Causal depthwise convolution along time: PaTH's w (layers/positional/path.cpp) and Canon layers.
// Kept as an op (docs/architecture.md, the op set): the shifted-copies composite keeps a (B, T, C) copy per
// tap.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// x (B, T, C), w (C, 1, K) (torch's Conv1d weight with groups = C) or (C, K) -> (B, T, C): each channel
// convolved with its own K taps, tap K - 1 on the current token and tap s on the token K - 1 - s back,
//   out[b, t, c] = sum over s = 0..K-1 of x[b, t - (K - 1 - s), c] w[c, s]   (x = 0 before t = 0),
// torch's Conv1d(C, C, K, groups=C, padding=K-1, bias=False)(x^T)[..., :T]^T. Summed in tap order s =
// 0, 1, ... (a tap past the sequence start, K - 1 - s >= T, is left out), as the shifted and added copies
// it replaces. Backward: dx[t] += g[t + K - 1 - s] w[c, s] per tap, nearest first; dw[c, s] += the sum
// over (b, t) in row order of g x shifted. Shapes that do not fit throw Error naming the op.
Tensor causal_depthwise_conv(const Tensor& x, const Tensor& w);

}  // namespace pelab
