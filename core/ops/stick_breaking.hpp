// Stick-breaking attention weights (Tan et al., "Scaling Stick-Breaking Attention", ICLR 2025): the
// row kernels the fused attention (core/ops/attention.cpp) runs in place of its softmax. Internal to
// core/ops; tested against a naive float64 form and by central differences (tests/core/test_stick_breaking.cpp).
//
// For query i with visible keys [lo, n), logits z_j and beta_j = sigmoid(z_j), the nearest key breaks
// off its share of the stick first:
//   A_ij = beta_j prod_{j < k < n} (1 - beta_k),   log A_ij = log sigmoid(z_j) - sum_{j < k < n} softplus(z_k)
// (the log-space form of the authors' reference, flash-linear-attention fla/ops/stickbreaking_attn/naive.py).
// The weights sum to at most 1; the rest of the stick is dropped (no remainder term). Without
// attend_current a query does not see its own key (the reference's default): n = i + off, and the first
// query of a sequence sees nothing (a zero row).
#pragma once

#include <cstddef>

#include "core/tensor.hpp"

namespace pelab::detail {

// The keys a causal row sees: [first, end). off = Tk - Tq; window 0 = no window; chunk 0 = no chunk (the
// chunk of the query's own key row i + off: with attend_current false a chunk's first query sees nothing).
struct StickRow {
  std::size_t first, end;
};
StickRow stick_row(std::size_t i, std::size_t off, bool attend_current, std::size_t window, std::size_t chunk = 0);

// Rows [r0, r1) of one (Tq, Tk) logit block S, in place: adds the bias rows when given, keeps the
// biased logits in Z (for backward; may be null without a tape), then writes A, exactly 0 off the row's keys.
void stick_breaking_rows(real* S, const real* bias, real* Z, std::size_t r0, std::size_t r1, std::size_t Tk,
                         std::size_t off, bool attend_current, std::size_t window, std::size_t chunk = 0);

// Backward in place: dS holds dL/dA on entry and dL/dz on return (0 off the row's keys). With
// G_j = dA_j A_j and sigma_j = sigmoid(z_j):  dz_j = G_j (1 - sigma_j) - sigma_j sum_{k < j} G_k
// (k over the row's keys): each key's own share, and its (1 - beta) in every farther key's weight.
void stick_breaking_backward_rows(real* dS, const real* A, const real* Z, std::size_t r0, std::size_t r1,
                                  std::size_t Tk, std::size_t off, bool attend_current, std::size_t window,
                                  std::size_t chunk = 0);

}  // namespace pelab::detail
