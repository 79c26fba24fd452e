// PaTH's key transform as one fused op (Yang et al., "PaTH Attention: Position Encoding via Accumulating
// Householder Transformations", NeurIPS 2025, arXiv:2505.16381), the additive bias that
// layers/positional/path.cpp gives the attention. Forward and backward side by side in path_keys.cpp;
// tested against a plain-loop reference and by central differences (tests/core/test_path_keys.cpp).
//
// Per (batch, head), with q, k, w (T, hs) and beta (T): K^(0) = k, and token i >= 1 transforms every
// earlier key,
//   d_ij = K^(i-1)_j . w_i,   K^(i)_j = K^(i-1)_j - beta_i d_ij w_i   (j < i; keys j >= i unchanged),
//   out_ij = scale * q_i . (K^(i)_j - k_j) for j < i, 0 for j >= i (strictly lower triangular).
// The authors' decoding recurrence, O(T^2 hs) per (batch, head); w need not be unit vectors here.
//
// Backward, with G = scale * dL/dout: dq_i = sum_{j<i} G_ij (K^(i)_j - k_j). The keys' adjoint A (T, hs)
// runs back from i = T-1 to 1: A_j += G_ij q_i (j < i); then through step i, with a_j = A_j . w_i:
//   dbeta_i = -sum_j a_j d_ij,  dw_i = -beta_i sum_j (a_j K^(i-1)_j + d_ij A_j),  A_j -= beta_i a_j w_i;
// finally dk_j = A_j - sum_{i>j} G_ij q_i.
//
// Memory: the tape keeps q, k, w and beta only (no per-step keys). Backward recomputes per (batch, head)
// in a per-thread scratch of T (T-1) / 2 + 4 T hs + 3 T reals: the forward again (keeping the d_ij),
// then the reverse pass, which rebuilds K^(i-1)_j = K^(i)_j + beta_i d_ij w_i from the last keys (a drift
// of a few ulps per step against the forward's keys). Each (batch, head) is computed by one thread in a
// fixed order: the bits depend on neither the thread count nor the vector width.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// q, k, w (B, H, T, hs), beta (B, H, T) -> (B, H, T, T), the formula above.
Tensor path_key_bias(const Tensor& q, const Tensor& k, const Tensor& w, const Tensor& beta, real scale);

}  // namespace pelab
