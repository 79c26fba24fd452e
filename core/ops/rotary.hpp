// Rotary position embedding (RoPE) as an op: rotates pairs of head dims by position-dependent angles.
// Kept as ops (docs/architecture.md, the op set): one pass; a composite of slices, products and a concat
// keeps copies.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

enum class RotaryLayout {
  interleaved,  // pairs (2i, 2i+1): the RoFormer paper
  half,         // pairs (i, i + rot/2): the Llama / GPT-NeoX split
};

// Angle tables for positions (B, T): cos and sin, each (B, T, n_pairs), angle = pos * theta_i, possibly
// scaled (scale_rotary_tables).
struct RotaryTables {
  Array cos, sin;
  std::size_t n_pairs() const { return cos.shape().empty() ? 0 : cos.shape().back(); }
};
// Explicit frequencies: theta_i = inv_freq[i], one per rotated pair (non-empty). Angles are computed
// in double, so positions far past training stay accurate.
RotaryTables rotary_tables(const IndexArray& positions, const std::vector<double>& inv_freq);
// RoFormer's frequencies theta_i = base^(-2i / rot_dims), i in [0, rot_dims / 2); rot_dims even, > 0.
std::vector<double> rotary_inv_freq(std::size_t rot_dims, double base);
// rotary_tables(positions, rotary_inv_freq(rot_dims, base)).
RotaryTables rotary_tables(const IndexArray& positions, std::size_t rot_dims, double base);
// Folds a magnitude into the tables: cos and sin at (b, t, i) are multiplied by
// scale(positions(b, t), i) (evaluated in double), so the op rotates and scales each pair. xPos uses
// zeta_i^(p / scale_base) for the queries' tables and zeta_i^(-p / scale_base) for the keys' (two
// tables); its positions p may differ from the angle positions (e.g. centred). positions (B, T) must
// match the tables.
void scale_rotary_tables(RotaryTables& tables, const IndexArray& positions,
                         const std::function<double(std::int32_t position, std::size_t pair)>& scale);

// x (B, H, T, hs): the first 2 * n_pairs dims of each head are rotated, the rest pass through.
// (x1, x2) -> (x1 c - x2 s, x1 s + x2 c) with (c, s) = (cos a, sin a), times the scale if any. Backward
// applies the transpose (x1, x2) -> (x1 c + x2 s, -x1 s + x2 c): the inverse rotation, times the scale.
// The tables are shared (not copied) with the tape: build them once per forward, use them in every layer.
Tensor rotary(const Tensor& x, std::shared_ptr<const RotaryTables> tables, RotaryLayout layout);

// qkv (B, T, 3C), C = n_heads * hs, as the fused projection gives it: the heads of the q chunk rotated
// by q_tables and those of the k chunk by k_tables, each as rotary() rotates a head (the same
// arithmetic, so the same bits), and the v chunk copied. Attention reads the result in place
// (attention_packed), so no head is split off and no output merged (layers/transformer.cpp). q_tables
// and k_tables may be one table (RoPE) or two (xPos's scales).
Tensor rotary_qkv(const Tensor& qkv, std::size_t n_heads, std::shared_ptr<const RotaryTables> q_tables,
                  std::shared_ptr<const RotaryTables> k_tables, RotaryLayout layout);

}  // namespace pelab
