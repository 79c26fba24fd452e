// Vectorized loops of the hot ops, on raw rows (internal to core/ops). Each is compiled per
// instruction set and chosen at run time (PELAB_HOT, core/simd.hpp), computes the same bits in every
// clone, and has a plain reference in tests/core_f32/test_kernels.cpp.
//
// Row kernels take a row range [r0, r1) so that callers can split rows over threads; column kernels a
// column range [j0, j1) of every row, so that sums over rows keep their row order whatever the split
// (results do not depend on the thread count, core/parallel.hpp).
#pragma once

#include <cstddef>

#include "core/tensor.hpp"

namespace pelab::kernels {

// GELU (erf form) of h = y + bias, in place over rows [r0, r1) of y (rows, F): y = 0.5 h (1 + erf(h /
// sqrt 2)) and, when d is not null, d = gelu'(h) = Phi(h) + h phi(h) (same layout as y). bias may be null.
void bias_gelu_rows(real* y, const real* bias, real* d, std::size_t r0, std::size_t r1, std::size_t F);

// Over columns [j0, j1) of every row of (rows, F): gh = g * d (written, or added when accumulate),
// and, when db is not null, db[j] += sum over rows of g * d (in row order).
void mul_colsum(const real* g, const real* d, real* gh, bool accumulate, real* db, std::size_t rows, std::size_t F,
                std::size_t j0, std::size_t j1);

// mul_colsum with gh = d, accumulate false: gd = g * gd in place (the same bits), db as there (may be null).
void mul_colsum_inplace(const real* g, real* gd, real* db, std::size_t rows, std::size_t F, std::size_t j0,
                        std::size_t j1);

// db[j] += sum over rows of g[r, j], in row order, for columns [j0, j1).
void colsum(const real* g, real* db, std::size_t rows, std::size_t F, std::size_t j0, std::size_t j1);

// LayerNorm forward of rows [r0, r1) of x (rows, C): mean and variance in double (two passes, 8
// accumulators each), y = (x - mean) rstd gamma + beta; mean and rstd per row (for backward). beta may
// be null. When a and b are given instead of x (x null), the row is first formed as h = a + b and
// written to h (LayerNorm fused with the residual add before it).
void layer_norm_rows(const real* x, const real* a, const real* b, real* h, const real* gamma, const real* beta,
                     real* y, real* mean, real* rstd, std::size_t r0, std::size_t r1, std::size_t C, real eps);

// LayerNorm backward of rows [r0, r1): dx (written, or added when accumulate) from g, x, gamma, mean and
// rstd; and, when dgamma / dbeta are not null, their row sums in row order (callers that split rows
// over threads pass null and use layer_norm_param_cols).
void layer_norm_backward_rows(const real* x, const real* g, const real* gamma, const real* mean, const real* rstd,
                              real* dx, bool accumulate, real* dgamma, real* dbeta, std::size_t r0, std::size_t r1,
                              std::size_t C);
// dgamma[j] += sum_r g (x - mean) rstd and dbeta[j] += sum_r g for columns [j0, j1), in row order
// (either may be null).
void layer_norm_param_cols(const real* x, const real* g, const real* mean, const real* rstd, real* dgamma,
                           real* dbeta, std::size_t rows, std::size_t C, std::size_t j0, std::size_t j1);

// The first key a row that sees keys [0, n) keeps under a sliding window of `window` keys (0: none).
inline std::size_t first_key(std::size_t n, std::size_t window) { return window && n > window ? n - window : 0; }
// ... and under a chunk of `chunk` key rows too (0: none), the row's query sitting at key row `row`: the
// first key of its chunk, floor(row / chunk) chunk (Llama 4's chunked local attention).
inline std::size_t first_key(std::size_t n, std::size_t window, std::size_t chunk, std::size_t row) {
  const std::size_t w = first_key(n, window), c = chunk ? row / chunk * chunk : 0;
  return w > c ? w : c;
}

// Attention softmax of rows [r0, r1) of one (Tq, Tk) logit block, in place: adds the bias rows when
// given, then row i keeps keys [first_key(visible_i, window, chunk, i + off), visible_i) (visible_i =
// i + off + 1 when causal, else Tk), softmax over them, the masked rest exactly 0. The backward below
// needs no window or chunk: P is 0 on every masked key. `scale`: each logit is first multiplied by it
// (blas::gemm_defer_alpha's factor; the same bits as scaling the block beforehand; 1: as given).
void attention_softmax_rows(real* S, const real* bias, std::size_t r0, std::size_t r1, std::size_t Tk,
                            std::size_t off, bool causal, std::size_t window = 0, std::size_t chunk = 0,
                            real scale = 1);
// Softmax backward in place over rows [r0, r1): dS = P (dP - rowsum(dP P)) on the visible keys, 0 after.
void attention_softmax_backward_rows(real* dS, const real* P, std::size_t r0, std::size_t r1, std::size_t Tk,
                                     std::size_t off, bool causal);

// out = a + b over n elements (out may alias a or b).
void add(const real* a, const real* b, real* out, std::size_t n);
// out = g (accumulate false) or out += g.
void copy_or_add(const real* g, real* out, bool accumulate, std::size_t n);

}  // namespace pelab::kernels
