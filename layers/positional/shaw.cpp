// Shaw et al. 2018 ("Self-Attention with Relative Position Representations"): learned relative keys
// and values inside attention. Each (query i, key j) pair looks up the clipped id distance
//   c_ij = clip(p_j - p_i, -k, k) + k   in [0, 2k]
// in two tables a^K, a^V (2k + 1, hs) per layer, shared by the heads (as in the paper):
//   logits_ij = (q_i . k_j + q_i . a^K[c_ij]) / sqrt(hs),   out_i = sum_j P_ij (v_j + a^V[c_ij]).
// `values = false` keeps the key term only. The fused attention core (core/ops/attention.hpp) does the
// work without materialising (B, H, T, T, hs); this file only builds the bucket index table from the
// position ids: (1, T, T) when every row has the same ids, else (B, T, T), once per forward and kept
// while the ids repeat; without a tape, past one query tile, a tile's rows (1 or B, rows, T) per call
// instead (bias_by_query_rows), so no (T, T) table exists in evaluation. Distances past the clip share
// the edge buckets, so any length (and a clip longer than any length) works. A function of id
// differences only: relative. Under a causal mask only c_ij <= k is ever read.
#include <algorithm>
#include <memory>

#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

struct ShawTables : Module {
  ShawTables(std::size_t buckets, std::size_t hs, bool values) {
    key = add_parameter("key", {buckets, hs}, ParamKind::embedding);  // a^K (2k + 1, hs)
    if (values) value = add_parameter("value", {buckets, hs}, ParamKind::embedding);  // a^V
  }
  Tensor key, value;
};

class Shaw : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Shaw(const ModelDims& dims, std::int64_t clip, bool values) : clip_(clip) {
    const std::size_t buckets = std::size_t(2 * clip + 1);
    for (std::size_t l = 0; l < dims.n_layers; ++l)  // pos.tables.<l>.key, pos.tables.<l>.value; null: not run
      tables_.push_back(!dims.runs_in(l) ? nullptr :
                        &add_module("tables." + std::to_string(l),
                                    std::make_unique<ShawTables>(buckets, dims.head_dim, values)));
  }

  bool bias_by_query_rows() const override { return true; }  // relative_kv honours ctx.tile

  // The bucket of every (query, key) pair, built on the first layer's call and kept while the same ids
  // come back (the tables' values change every step, the index does not); a query tile's rows per call.
  RelativeKV relative_kv(const AttentionContext& ctx) override {
    std::shared_ptr<const IndexArray> index;
    if (ctx.tile.active()) {
      index = std::make_shared<IndexArray>(buckets(ctx.positions, ctx.tile));
    } else {
      if (!seen_.same(ctx.positions)) {
        index_ = std::make_shared<IndexArray>(buckets(ctx.positions, QueryTile{}));
        seen_.set(ctx.positions);
      }
      index = index_;
    }
    const ShawTables& t = *tables_.at(ctx.layer);
    RelativeKV r;
    r.index = std::move(index);
    r.key = t.key;
    r.value = t.value;  // undefined when keys only
    return r;
  }

 private:
  // (rows, i1 - i0, keys): rows 1 when every row has the same ids, else B; query rows [i0, i1) against
  // keys [0, keys) of the tile, or every pair when it is inactive.
  IndexArray buckets(const IndexArray& positions, const QueryTile& tile) const {
    return pairwise_index(positions, rows_share_positions(positions), tile, [&](std::int64_t rel) {  // key - query
      return static_cast<std::int32_t>(std::clamp(rel, -clip_, clip_) + clip_);
    }, /*spanned=*/true);  // relative_kv: the attention spans the buckets in use
  }

  std::int64_t clip_;
  std::vector<ShawTables*> tables_;
  SeenPositions seen_;
  std::shared_ptr<const IndexArray> index_;  // shared with every layer's tape node
};

}  // namespace

PELAB_REGISTER_ENCODING(shaw, encoding_spec("shaw",
    "learned relative keys (and values) of the clipped distance inside attention (Shaw et al. 2018)")
    .relative()
    .relative_kv()
    .params({
        integer_param("clip", 16,
            "clip distance k: distances beyond +-k share the edge buckets (2k + 1 per layer)").in(1.0, 100000.0),
        bool_param("values", true, "relative values a^V too (keys and values); false: relative keys only"),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Shaw>(dims, p.get_int("clip"), p.get_bool("values"));
    }));

}  // namespace pelab
