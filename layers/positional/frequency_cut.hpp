// The cut of HoPE and FoPE (hope.cpp, fope.cpp): a rotary frequency is kept only if it turns a full
// period within L positions, w >= 2 pi / L. L is the encoding's `length` parameter, or the training
// position range when it is 0.
#pragma once

#include <cmath>

#include "layers/positional/encoding.hpp"

namespace pelab {

inline std::size_t cut_length(const Params& p, const ModelDims& dims) {
  const auto L = p.get_int("length");
  return L > 0 ? static_cast<std::size_t>(L) : dims.max_position;
}

// The lowest frequency kept: 2 pi / L.
inline double frequency_floor(const Params& p, const ModelDims& dims) {
  return 2 * M_PI / double(cut_length(p, dims));
}

}  // namespace pelab
