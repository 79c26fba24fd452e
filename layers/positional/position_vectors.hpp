// Helpers of the encodings that add a fixed vector per position (integer, normalized, binary,
// multiplicative, concat): a per-forward cache of that constant, and the spreading of one scalar
// per position over the embedding.
#pragma once

#include <string>
#include <vector>

#include "core/shape_only.hpp"
#include "core/params/param_spec.hpp"
#include "layers/positional/pairwise.hpp"  // SeenPositions

namespace pelab {

// A constant (B, T, C) tensor computed from the position ids, rebuilt only when other ids come in
// (contiguous training feeds the same ids every step).
class PositionVectorCache {
 public:
  template <class Build>
  const Tensor& get(const IndexArray& positions, Build build) {
    if (!value_.defined() || !seen_.same(positions)) {
      value_ = Tensor(build());
      seen_.set(positions);
    }
    return value_;
  }

 private:
  SeenPositions seen_;
  Tensor value_;
};

// How one scalar v per position becomes a vector:
//   alternating: +v on even components, -v on odd ones. Zero mean (for even C), so the pre-LN blocks'
//                LayerNorm keeps it; its norm grows with v, and LayerNorm then shrinks the token part.
//   constant:    v on every component, as the write-ups cited in integer.cpp do. A LayerNorm subtracts
//                each vector's mean, so in this pre-LN model it is removed exactly: the model is NoPE up
//                to float rounding of x + v (kept to show exactly that).
enum class ScalarPattern { alternating, constant };

inline ParamSpec scalar_pattern_param() {
  return {"pattern", ValueType::string, std::string("alternating"), {}, {}, {"alternating", "constant"},
          "alternating: +v on even, -v on odd components (zero mean, survives LayerNorm); constant: v on "
          "every component, the usual write-ups' form (pre-LN LayerNorm removes it exactly)"};
}

inline ScalarPattern scalar_pattern(const Params& p) {
  return p.get_string("pattern") == "constant" ? ScalarPattern::constant : ScalarPattern::alternating;
}

// values (B*T, in the ids' row-major order) -> (B, T, C)
inline Array scalar_position_vectors(const std::vector<double>& values, std::size_t B, std::size_t T,
                                     std::size_t C, ScalarPattern pattern) {
  Array out(Shape{B, T, C});
  real* po = out.data();
  for (std::size_t r = 0, n = shape_only() ? 0 : B * T; r < n; ++r) {  // core/shape_only.hpp
    const real v = static_cast<real>(values[r]);
    for (std::size_t k = 0; k < C; ++k)
      po[r * C + k] = (pattern == ScalarPattern::alternating && k % 2 == 1) ? -v : v;
  }
  return out;
}

}  // namespace pelab
