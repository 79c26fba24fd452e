// T5 relative position bias (Raffel et al. 2020): each (query, key) pair falls into a bucket of its
// distance (exact for short distances, logarithmic up to max_distance, one shared bucket beyond), and
// every head adds one learned scalar per bucket to its logits. T5 shares one table across layers (as
// Kazemnejad et al. 2023 do); `shared_layers = false` gives each layer its own. The buckets depend on
// id differences only, so the bias is relative and defined for any length.
#include "layers/positional/t5.hpp"

#include <algorithm>
#include <cmath>

#include "core/ops/embedding.hpp"
#include "core/ops/shape.hpp"
#include "layers/basic.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {

std::int32_t t5_bucket(std::int64_t relative, bool bidirectional, std::int32_t num_buckets, std::int32_t max_distance) {
  std::int32_t ret = 0, buckets = num_buckets;
  std::int64_t n;
  if (bidirectional) {
    buckets /= 2;
    if (relative > 0) ret += buckets;
    n = relative < 0 ? -relative : relative;
  } else {
    n = relative < 0 ? -relative : 0;
  }
  const std::int32_t max_exact = buckets / 2;
  if (n < max_exact) return ret + static_cast<std::int32_t>(n);
  // float32 throughout, as the reference: log(float(n) / max_exact) / float(log(max_distance / max_exact))
  const float scaled = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) /
                       static_cast<float>(std::log(double(max_distance) / double(max_exact))) *
                       static_cast<float>(buckets - max_exact);
  const std::int64_t large = max_exact + static_cast<std::int64_t>(scaled);
  return ret + static_cast<std::int32_t>(std::min<std::int64_t>(large, buckets - 1));
}

namespace {

std::int32_t max_exact(std::int64_t num_buckets, bool causal) { return std::int32_t((causal ? num_buckets : num_buckets / 2) / 2); }

class T5Bias : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  T5Bias(const ModelDims& dims, std::int32_t num_buckets, std::int32_t max_distance, bool shared_layers)
      : num_buckets_(num_buckets), max_distance_(max_distance), bidirectional_(!dims.causal),
        shared_layers_(shared_layers) {
    // pos.tables.<l>.weight (num_buckets, H), an embedding table; null: a layer it does not run in
    for (std::size_t l = 0; l < (shared_layers ? 1 : dims.n_layers); ++l)
      tables_.push_back(!dims.makes_table(l, shared_layers) ? nullptr :
                        &add_module("tables." + std::to_string(l),
                                    std::make_unique<Embedding>(std::size_t(num_buckets), dims.n_heads)));
    // One bucket per distance 0..max_distance on each side; every larger distance has the last one.
    for (std::int64_t n = 0; n <= max_distance; ++n) {
      ahead_.push_back(t5_bucket(n, bidirectional_, num_buckets, max_distance));
      behind_.push_back(t5_bucket(-n, bidirectional_, num_buckets, max_distance));
    }
  }

  void begin_forward(const IndexArray&) override {
    biases_.clear();  // the tables change with every optimizer step: recompute the bias per forward
  }

  bool bias_by_query_rows() const override { return true; }

  // (1 or B, H, T, T): bias[b, h, i, j] = table[bucket(p_j - p_i), h]; or the rows of ctx.tile.
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    const Embedding& table = *tables_.at(shared_layers_ ? 0 : ctx.layer);
    if (ctx.tile.active()) return bias(table, buckets(ctx.positions, ctx.shared_positions, ctx.tile));
    if (!seen_.same(ctx.positions)) {  // new ids: new buckets (kept while the ids repeat)
      buckets_ = buckets(ctx.positions, ctx.shared_positions, ctx.tile);
      seen_.set(ctx.positions);
      biases_.clear();
    }
    const std::size_t t = shared_layers_ ? 0 : ctx.layer;
    if (biases_.size() <= t) biases_.resize(t + 1);
    if (!biases_[t].defined()) biases_[t] = bias(table, buckets_);
    return biases_[t];
  }

 private:
  // The bucket of every (query, key) pair: (1, Tq, Tk) for shared ids, else (B, Tq, Tk).
  IndexArray buckets(const IndexArray& positions, bool shared, const QueryTile& tile) const {
    const auto last = static_cast<std::int64_t>(max_distance_);
    return pairwise_index(positions, shared, tile, [&](std::int64_t rel) {  // key - query
      return rel >= 0 ? ahead_[std::size_t(std::min(rel, last))] : behind_[std::size_t(std::min(-rel, last))];
    });
  }

  static Tensor bias(const Embedding& table, const IndexArray& buckets) {
    return permute(table.forward(buckets), {0, 3, 1, 2});  // (rows, Tq, Tk, H) -> (rows, H, Tq, Tk)
  }

  std::int32_t num_buckets_, max_distance_;
  bool bidirectional_, shared_layers_;
  std::vector<Embedding*> tables_;
  std::vector<std::int32_t> ahead_, behind_;  // bucket of key - query = +n, -n for n in [0, max_distance]
  SeenPositions seen_;
  IndexArray buckets_;
  std::vector<Tensor> biases_;  // this forward's bias per table
};

void check(const Params& p, const ModelDims& dims) {
  const std::int64_t nb = p.get_int("num_buckets"), md = p.get_int("max_distance");
  const std::int32_t exact = max_exact(nb, dims.causal);
  if (md <= exact)
    throw Error("encoding 't5': max_distance " + std::to_string(md) + " must be greater than num_buckets/" +
                (dims.causal ? "2" : "4") + " = " + std::to_string(exact) + " (num_buckets " + std::to_string(nb) +
                ", " + (dims.causal ? "causal" : "bidirectional: half the buckets per side") +
                "): distances below that have exact buckets and the logarithmic ones span [" +
                std::to_string(exact) + ", max_distance)");
}

}  // namespace

PELAB_REGISTER_ENCODING(t5, encoding_spec("t5",
    "learned scalar bias per head for bucketed relative distances (Raffel et al. 2020)")
    .relative()
    .params({
        integer_param("num_buckets", 32, "distance buckets (per side when model.causal = false)").in(4.0, 4096.0),
        integer_param("max_distance", 128,
            "distances from here on share the last bucket; "
            "must exceed num_buckets/2 (causal) or num_buckets/4").in(1.0, 1e6),
        bool_param("shared_layers", true, "one bias table for all layers (as T5); false: one per layer"),
    })
    .validate(check)
    .make([](const Params& p, const ModelDims& dims) {
      check(p, dims);
      return std::make_unique<T5Bias>(dims, static_cast<std::int32_t>(p.get_int("num_buckets")),
                                      static_cast<std::int32_t>(p.get_int("max_distance")), p.get_bool("shared_layers"));
    }));

}  // namespace pelab
