// Position-only pairwise quantities shared by the additive-bias encodings (T5, Kerple, FIRE): built once
// per forward in begin_forward, kept while the same ids come back, shared by every layer.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/shape_only.hpp"
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

// The key-minus-query id differences of pairwise_index's pairs, from the ids alone in O(rows T):
// over every pair, and over the pairs a causal attention reads (key index <= query index). hi < lo: none.
struct DifferenceRange {
  std::int64_t lo, hi, causal_lo, causal_hi;
};
DifferenceRange pairwise_difference_range(const IndexArray& positions, bool shared, const QueryTile& tile);

// (rows, end - begin, keys) int32 with out[b, i, j] = f(p_j - p_i) (key id minus query id, int64) of row
// b: rows = 1 when `shared`, else B; query rows [tile.begin, tile.end) against keys [0, tile.keys), or
// every pair when the tile is inactive. The bucket tables of T5 and Shaw.
// Shape-only (core/shape_only.hpp): the table is allocated and not filled. `spanned`: the attention
// spans the range of its values (relative_kv: the buckets in use, core/ops/attention_dims.cpp), so that
// range is noted with it, from the ids in O(rows T): f at the extreme differences, so f must then be
// non-decreasing. The one shape of the model read from a table's values, said here.
template <class F>
IndexArray pairwise_index(const IndexArray& positions, bool shared, const QueryTile& tile, F f, bool spanned = false) {
  const std::size_t T = positions.shape()[1], rows = shared ? 1 : positions.shape()[0];
  const std::size_t i0 = tile.active() ? tile.begin : 0, i1 = tile.active() ? tile.end : T;
  const std::size_t keys = tile.active() ? tile.keys : T;
  IndexArray out(Shape{rows, i1 - i0, keys});
  if (shape_only()) {
    if (!spanned) return out;
    const DifferenceRange d = pairwise_difference_range(positions, shared, tile);
    const auto range = [&](std::int64_t lo, std::int64_t hi) {
      if (lo > hi) return memory::ValueRange{};
      const std::int32_t a = f(lo), b = f(hi);
      return memory::ValueRange{std::min(a, b), std::max(a, b)};
    };
    memory::note_index_facts(out.data(), {range(d.lo, d.hi), range(d.causal_lo, d.causal_hi)});
    return out;
  }
  std::int32_t* o = out.data();
  for (std::size_t b = 0; b < rows; ++b) {
    const std::int32_t* p = positions.data() + b * T;
    for (std::size_t i = i0; i < i1; ++i)
      for (std::size_t j = 0; j < keys; ++j) *o++ = f(std::int64_t(p[j]) - std::int64_t(p[i]));
  }
  return out;
}

}  // namespace pelab
