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
// Kept as an op (docs/architecture.md, the op set): O(T^2 hs) scratch instead of (B, H, T, T, hs) transformed
// keys.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// q, k, w (B, H, T, hs), beta (B, H, T) -> (B, H, T, T), the formula above.
Tensor path_key_bias(const Tensor& q, const Tensor& k, const Tensor& w, const Tensor& beta, real scale);

// The same rows a few at a time, without a tape (evaluation by query tiles, layers/positional/path.cpp):
// the keys as the last given row left them are carried from call to call, so no (T, T) block exists and
// each row is computed once, with path_key_bias's arithmetic (the same bits).
struct PathKeys {
  Array KT, kT;          // (B H, hs, T): the keys as row next - 1 left them, and as given, transposed
  std::size_t next = 0;  // rows [0, next) given
  std::size_t B = 0, H = 0, T = 0, hs = 0;
};
// k (B, H, T, hs): keys before any row.
PathKeys path_keys_start(const Array& k);
// Rows [from, to) of path_key_bias: q (B, H, to - from, hs) those rows' queries, w (B, H, T, hs) and beta
// (B, H, T) the whole sequence's -> (B, H, to - from, T). Rows must come in order: from <= keys.next
// (no gap); rows below keys.next were given before and are 0 here (a caller that repeats rows drops
// them). Advances keys.next to `to`.
Array path_key_bias_rows(const Array& q, const Array& w, const Array& beta, real scale, PathKeys& keys,
                         std::size_t from, std::size_t to);

}  // namespace pelab
