// One-layer GRU and LSTM over a batch-first sequence, with PyTorch's gate order and equations
// (torch.nn.GRU / torch.nn.LSTM, num_layers = 1, batch_first = True), backward by BPTT.
//
// Cost: the input projections of all T steps are one GEMM (B*T, I) x (I, G); each step then does one
// (B, H) x (H, G) GEMM for the recurrent projection and a raw loop for the gates (G = 3H or 4H).
// Backward mirrors it: one (B, G) x (G, H) GEMM per step for dh, and the weight gradients as single
// GEMMs over all steps at the end. Every buffer comes from the caching allocator (sizes repeat from
// step to step), none is allocated per time step.
// Kept as ops (docs/architecture.md, the op set): one GEMM for all input projections, one node instead of T
// steps of gates.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// GRU, gates in PyTorch's order (r, z, n):
//   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
//   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
//   h' = (1 - z) * n + z * h
// x (B, T, I), h0 (B, H) or undefined for zeros, w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H) or
// undefined for none -> every step's h (B, T, H).
Tensor gru(const Tensor& x, const Tensor& h0, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
           const Tensor& b_hh);

// LSTM, gates in PyTorch's order (i, f, g, o):
//   i = sigmoid(W_ii x + b_ii + W_hi h + b_hi),  f = sigmoid(...f...),  g = tanh(...g...),  o = sigmoid(...o...)
//   c' = f * c + i * g,  h' = o * tanh(c')
// x (B, T, I), h0 and c0 (B, H) or undefined for zeros, w_ih (4H, I), w_hh (4H, H), b_ih and b_hh (4H)
// or undefined -> every step's h (B, T, H).
Tensor lstm(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
            const Tensor& b_ih, const Tensor& b_hh);

}  // namespace pelab
