// Rotary position embedding (RoPE) as an op: rotates pairs of head dims by position-dependent angles.
#pragma once

#include <memory>

#include "core/tensor.hpp"

namespace pelab {

enum class RotaryLayout {
  interleaved,  // pairs (2i, 2i+1): the RoFormer paper
  half,         // pairs (i, i + rot/2): the Llama / GPT-NeoX split
};

// Angle tables for positions (B, T): cos and sin, each (B, T, n_pairs), angle = pos * theta_i.
struct RotaryTables {
  Array cos, sin;
  std::size_t n_pairs() const { return cos.shape().empty() ? 0 : cos.shape().back(); }
};
// theta_i = base^(-2i / rot_dims), i in [0, rot_dims / 2). rot_dims must be even and > 0.
RotaryTables rotary_tables(const IndexArray& positions, std::size_t rot_dims, double base);

// x (B, H, T, hs): the first 2 * n_pairs dims of each head are rotated, the rest pass through.
// (x1, x2) -> (x1 cos a - x2 sin a, x1 sin a + x2 cos a). Backward is the inverse rotation.
// The tables are shared (not copied) with the tape: build them once per forward, use them in every layer.
Tensor rotary(const Tensor& x, std::shared_ptr<const RotaryTables> tables, RotaryLayout layout);

}  // namespace pelab
