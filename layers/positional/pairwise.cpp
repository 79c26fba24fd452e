#include "layers/positional/pairwise.hpp"

#include <algorithm>
#include <cstdint>

#include "core/shape_only.hpp"

namespace pelab {

bool SeenPositions::same(const IndexArray& positions) const {
  return ids_.size() > 0 && positions.shape() == ids_.shape() &&
         std::equal(positions.begin(), positions.end(), ids_.begin());
}

Array pairwise_difference(const IndexArray& positions, bool shared) {
  return pairwise_difference(positions, shared, QueryTile{});
}

Array pairwise_difference(const IndexArray& positions, bool shared, const QueryTile& tile) {
  const std::size_t T = positions.shape()[1], rows = shared ? 1 : positions.shape()[0];
  const std::size_t i0 = tile.active() ? tile.begin : 0, i1 = tile.active() ? tile.end : T;
  const std::size_t keys = tile.active() ? tile.keys : T;
  Array out(Shape{rows, i1 - i0, keys});
  real* o = out.data();
  for (std::size_t b = 0; b < (shape_only() ? 0 : rows); ++b) {  // core/shape_only.hpp
    const std::int32_t* p = positions.data() + b * T;
    for (std::size_t i = i0; i < i1; ++i)
      for (std::size_t j = 0; j < keys; ++j) *o++ = static_cast<real>(std::int64_t(p[i]) - std::int64_t(p[j]));
  }
  return out;
}

DifferenceRange pairwise_difference_range(const IndexArray& positions, bool shared, const QueryTile& tile) {
  const std::size_t T = positions.shape()[1], rows = shared ? 1 : positions.shape()[0];
  const std::size_t i0 = tile.active() ? tile.begin : 0, i1 = tile.active() ? tile.end : T;
  const std::size_t keys = tile.active() ? tile.keys : T;
  DifferenceRange d{INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN};
  for (std::size_t b = 0; b < rows && keys > 0; ++b) {
    const std::int32_t* p = positions.data() + b * T;
    const auto [kmin, kmax] = std::minmax_element(p, p + keys);
    std::int64_t run_lo = INT64_MAX, run_hi = INT64_MIN;  // over keys [0, min(i, keys - 1)]
    for (std::size_t i = 0, j = 0; i < i1; ++i) {
      for (; j <= i && j < keys; ++j) run_lo = std::min<std::int64_t>(run_lo, p[j]), run_hi = std::max<std::int64_t>(run_hi, p[j]);
      if (i < i0) continue;
      d.lo = std::min(d.lo, std::int64_t(*kmin) - p[i]), d.hi = std::max(d.hi, std::int64_t(*kmax) - p[i]);
      d.causal_lo = std::min(d.causal_lo, run_lo - p[i]), d.causal_hi = std::max(d.causal_hi, run_hi - p[i]);
    }
  }
  return d;
}

Array query_positions(const IndexArray& positions, bool shared, const QueryTile& tile) {
  const std::size_t T = positions.shape()[1], rows = shared ? 1 : positions.shape()[0];
  const std::size_t i0 = tile.active() ? tile.begin : 0, i1 = tile.active() ? tile.end : T;
  Array out(Shape{rows, i1 - i0, 1});
  real* o = out.data();
  for (std::size_t b = 0; b < (shape_only() ? 0 : rows); ++b)
    for (std::size_t i = i0; i < i1; ++i) *o++ = static_cast<real>(positions(b, i));
  return out;
}

}  // namespace pelab
