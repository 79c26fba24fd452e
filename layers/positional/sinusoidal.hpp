// The sinusoidal table, exposed for tests and plots.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// positions (...) -> (..., d): PE[t, 2i] = sin(t / base^(2i/d)), PE[t, 2i+1] = cos(t / base^(2i/d)).
Array sinusoidal_table(const IndexArray& positions, std::size_t d, double base);

}  // namespace pelab
