// Position-only pairwise quantities shared by the additive-bias encodings (T5, Kerple, FIRE): built once
// per forward in begin_forward, kept while the same ids come back, shared by every layer.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

// The ids a table was built for: same() is true when `positions` equals them (shape and values).
class SeenPositions {
 public:
  bool same(const IndexArray& positions) const;
  void set(const IndexArray& positions) { ids_ = positions; }

 private:
  IndexArray ids_;
};

// (rows, T, T) with out[b, i, j] = p_i - p_j (query id minus key id) of row b; rows = 1 when `shared`
// (every row has the same ids: row 0 stands for all), else B.
Array pairwise_difference(const IndexArray& positions, bool shared);

}  // namespace pelab
