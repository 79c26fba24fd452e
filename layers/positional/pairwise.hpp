// Position-only pairwise quantities shared by the additive-bias encodings (T5, Kerple, FIRE): built once
// per forward in begin_forward, kept while the same ids come back, shared by every layer.
#pragma once

#include "core/tensor.hpp"
#include "layers/positional/encoding.hpp"  // QueryTile

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
// Its query rows [tile.begin, tile.end) against keys [0, tile.keys): (rows, end - begin, keys); the whole
// table when the tile is inactive.
Array pairwise_difference(const IndexArray& positions, bool shared, const QueryTile& tile);
// Rows of (rows, T) position ids as reals, query rows [tile.begin, tile.end) only when the tile is active:
// (rows, T or end - begin, 1).
Array query_positions(const IndexArray& positions, bool shared, const QueryTile& tile);

}  // namespace pelab
