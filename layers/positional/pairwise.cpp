#include "layers/positional/pairwise.hpp"

#include <algorithm>

namespace pelab {

bool SeenPositions::same(const IndexArray& positions) const {
  return ids_.size() > 0 && positions.shape() == ids_.shape() &&
         std::equal(positions.begin(), positions.end(), ids_.begin());
}

Array pairwise_difference(const IndexArray& positions, bool shared) {
  const std::size_t T = positions.shape()[1], rows = shared ? 1 : positions.shape()[0];
  Array out(Shape{rows, T, T});
  real* o = out.data();
  for (std::size_t b = 0; b < rows; ++b) {
    const std::int32_t* p = positions.data() + b * T;
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j)
        *o++ = static_cast<real>(std::int64_t(p[i]) - std::int64_t(p[j]));
  }
  return out;
}

}  // namespace pelab
