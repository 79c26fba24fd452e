// Transformer-XL's relative positional encoding (Dai et al. 2019, "Transformer-XL: Attentive Language
// Models Beyond a Fixed-Length Context", arXiv:1901.02860, Section 3.3), the RELATIVE encoding of
// Delétang et al. 2023 (arXiv:2207.02098) and Ruoss et al. 2023 (arXiv:2305.16843). Per head, for query i
// and key j:
//   A_ij = (q_i . k_j  +  q_i . W_R R_d  +  u . k_j  +  v . W_R R_d) / sqrt(hs)
// with R_d the fixed sinusoid of the distance d, W_R a learned projection per layer (its rows h hs ..
// (h + 1) hs give head h) and u, v learned per-head global biases per layer.
//
// As DeepMind's code (github.com/google-deepmind/neural_networks_chomsky_hierarchy, commit 2b8eb4b,
// models/positional_encodings.py: compute_attention_with_relative_encodings, sinusoid_position_encoding,
// relative_shift), where it and the paper differ or the paper leaves it open:
//   - the distance: d = p_i - p_j (query id minus key id, the paper's i - j) with bidirectional attention,
//     but d = p_i - p_j + 1 with causal attention. DeepMind's causal table runs over T, T-1, ..., 1 (not
//     the paper's T-1, ..., 0) and its _rel_shift_causal puts R_{i-j+1} at (i, j): the diagonal reads R_1.
//     (Bidirectional: its table runs over T, ..., -T+1 and _rel_shift_inner puts R_{i-j} at (i, j), so
//     negative distances, keys after the query, have rows of their own.)
//   - R_d = [sin(d w_0), ..., sin(d w_{m-1}), cos(d w_0), ..., cos(d w_{m-1})] (sines, then cosines, not
//     interleaved), w_k = base^(-2k/D), m = ceil(D/2), over the whole model width D = H hs (not per head);
//     base is DeepMind's max_time (10000);
//   - W_R, u and v belong to each layer (the original Transformer-XL code shares u and v by the layers);
//     u, v start at N(0, 0.02) as DeepMind's (pelab's scheme would start a bias at 0); W_R is a Linear
//     weight (fan-in 2m) under [model] init;
//   - all four terms are divided by sqrt(hs) together.
// The last three terms come through attention_bias (the attention core adds s q . k): they are divided by
// sqrt(hs) here, so an [attention] temperature or log-length scaling scales q . k only (use none to keep
// DeepMind's logits). DeepMind's rel_shift is a gather: the position logits of every distance in this
// forward, z_d = (q_i + v) . W_R R_d (B, H, Tq, R), are read at each pair's distance with interp_gather (at
// integer indices: an exact gather; the index (B, H, T, T) is kept while the same ids come back). Without
// a tape (evaluation) the same values are gathered straight into the bias, by query tiles past 128 tokens,
// W_R R and u . k computed once per layer. Distances come from the ids, so any ids (offset, randomized, per
// row) and any length work: relative.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/shape_only.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/interp_gather.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/shape.hpp"
#include "core/tape.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

// Sines or cosines per frequency: m = ceil(D / 2) of each, 2m table columns (DeepMind's arange(0, D, 2)).
std::size_t table_width(const ModelDims& d) { return 2 * ((d.n_heads * d.head_dim + 1) / 2); }

struct XlLayer : Module {
  XlLayer(std::size_t H, std::size_t hs, std::size_t width) {
    const Initializer small = [](Array& a, Rng& rng) {  // DeepMind's RandomNormal(stddev=0.02)
      for (auto& x : a) x = static_cast<real>(0.02 * rng.normal());
    };
    weight = add_parameter("weight", {H * hs, width}, ParamKind::weight, width);  // W_R (D, 2m)
    u = add_parameter("u", {H, hs}, ParamKind::bias, small);                     // content bias
    v = add_parameter("v", {H, hs}, ParamKind::bias, small);                     // position bias
  }
  Tensor weight, u, v;
};

// The distances the visible pairs span, over every row: [lo, hi].
struct DistanceRange {
  std::int64_t lo = 0, hi = 0;
  std::size_t size() const { return std::size_t(hi - lo + 1); }
};

class TransformerXl : public PositionalEncoding {
 public:
  TransformerXl(const ModelDims& dims, double base)
      : H_(dims.n_heads), hs_(dims.head_dim), width_(table_width(dims)), base_(base), causal_(dims.causal),
        scale_(real(1) / std::sqrt(real(dims.head_dim))) {
    for (std::size_t l = 0; l < dims.n_layers; ++l)  // pos.layers.<l>.weight, .u, .v; null: not run there
      layers_.push_back(!dims.runs_in(l) ? nullptr :
                        &add_module("layers." + std::to_string(l), std::make_unique<XlLayer>(H_, hs_, width_)));
  }

  bool bias_by_query_rows() const override { return true; }

  // (B, H, Tq, Tk): the three terms beyond q . k, divided by sqrt(hs); Tq = Tk = T, or the rows [begin, end)
  // of a query tile (q holds just those) against every key.
  Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) override {
    const std::size_t B = q.size(0), Tq = q.size(2), T = k.size(2);
    if (ctx.tile.active() ? ctx.tile.end - ctx.tile.begin != Tq || ctx.tile.keys != T : Tq != T)
      throw Error("encoding 'transformer_xl': needs self-attention (as many keys as queries)");
    if (!seen_.same(ctx.positions)) new_positions(ctx.positions);
    const XlLayer& L = *layers_.at(ctx.layer);
    const Tensor qv = mul_scalar(add(q, reshape(L.v, {1, H_, 1, hs_})), scale_);  // (q + v) / sqrt(hs): (B, H, Tq, hs)
    if (Tape::current().should_record({&q, &k, &L.weight, &L.u, &L.v}))  // tape ops, the gather on a kept index
      return add(interp_gather(matmul(qv, relative_keys(L, B)), full_index(B)), content_bias(L, k));
    // No tape: the same values gathered straight into the bias, without an index tensor. A layer's W_R R and
    // u . k are computed at its first (or only) tile and kept for its later tiles.
    if (!ctx.tile.active() || ctx.tile.begin == 0 || tile_layer_ != ctx.layer) {
      tile_keys_ = relative_keys(L, B);
      tile_content_ = content_bias(L, k);
      tile_layer_ = ctx.tile.active() ? ctx.layer : std::size_t(-1);
    }
    return Tensor(gathered(matmul(qv, tile_keys_).value(), tile_content_.value(), ctx.positions,
                           ctx.tile.active() ? ctx.tile.begin : 0));
  }

 private:
  // New ids: the distance range, its sinusoid table and (lazily) the full index.
  void new_positions(const IndexArray& positions) {
    range_ = distances(positions);
    Array table(Shape{range_.size(), width_});  // (R, 2m): R_d for d = lo..hi, in double, rounded once
    const std::size_t m = width_ / 2;
    const double D = double(H_ * hs_);
    for (std::size_t r = 0, n = shape_only() ? 0 : range_.size(); r < n; ++r)  // core/shape_only.hpp
      for (std::size_t f = 0; f < m; ++f) {
        const double a = double(range_.lo + std::int64_t(r)) * std::pow(base_, -double(2 * f) / D);
        table(r, f) = static_cast<real>(std::sin(a));
        table(r, m + f) = static_cast<real>(std::cos(a));
      }
    table_ = Tensor(std::move(table));
    index_ = Tensor();
    ids_ = positions;
    seen_.set(positions);
  }

  // Causal: d = p_i - p_j + 1 over the keys j <= i; bidirectional: p_i - p_j over every pair.
  DistanceRange distances(const IndexArray& positions) const {
    const std::size_t B = positions.shape()[0], T = positions.shape()[1];
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    for (std::size_t b = 0; b < B; ++b) {
      const std::int32_t* p = positions.data() + b * T;
      std::int64_t kmin = p[0], kmax = p[0];  // over the keys seen so far (causal) or all (bidirectional)
      if (!causal_)
        for (std::size_t j = 0; j < T; ++j) kmin = std::min<std::int64_t>(kmin, p[j]), kmax = std::max<std::int64_t>(kmax, p[j]);
      for (std::size_t i = 0; i < T; ++i) {
        if (causal_) kmin = std::min<std::int64_t>(kmin, p[i]), kmax = std::max<std::int64_t>(kmax, p[i]);
        lo = std::min(lo, p[i] - kmax + offset());
        hi = std::max(hi, p[i] - kmin + offset());
      }
    }
    return {lo, hi};
  }
  std::int64_t offset() const { return causal_ ? 1 : 0; }

  // (B, H, hs, R): head h's W_R R_d for every distance d of the range, broadcast over the batch.
  Tensor relative_keys(const XlLayer& L, std::size_t B) const {
    const std::size_t R = range_.size();
    const Tensor keys = matmul(reshape(L.weight, {H_, hs_, width_}), table_, false, true);  // (H, hs, R)
    return B == 1 ? reshape(keys, {1, H_, hs_, R}) : broadcast_to(keys, {B, H_, hs_, R});
  }

  // (B, H, 1, T): u . k_j / sqrt(hs) for every key.
  Tensor content_bias(const XlLayer& L, const Tensor& k) const {
    const std::size_t B = k.size(0);
    const Tensor u = broadcast_to(reshape(mul_scalar(L.u, scale_), {1, H_, 1, hs_}), {B, H_, 1, hs_});
    return matmul(u, k, false, true);
  }

  // Every pair's index into the range, kept while the same ids come back (shared by the layers).
  const Tensor& full_index(std::size_t B) {
    if (!index_.defined()) index_ = Tensor(distance_index(B));
    return index_;
  }

  // (B, H, T, T): d_ij - lo for every pair of the kept ids; a pair outside the range (a future key under
  // the causal mask, never visible) is clamped into it.
  Array distance_index(std::size_t B) const {
    const std::size_t T = ids_.shape()[1];
    const std::int64_t top = std::int64_t(range_.size()) - 1;
    Array out(Shape{B, H_, T, T});
    for (std::size_t b = 0, nb = shape_only() ? 0 : B; b < nb; ++b) {
      const std::int32_t* p = ids_.data() + b * T;
      real* plane = out.data() + b * H_ * T * T;
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) {
          const std::int64_t d = std::int64_t(p[i]) - std::int64_t(p[j]) + offset() - range_.lo;
          plane[i * T + j] = static_cast<real>(std::clamp<std::int64_t>(d, 0, top));
        }
      for (std::size_t h = 1; h < H_; ++h) std::copy(plane, plane + T * T, plane + h * T * T);
    }
    return out;
  }

  // (B, H, n, T): z (B, H, n, R) read at each pair's distance plus u . k_j (B, H, 1, T), query rows from i0.
  Array gathered(const Array& z, const Array& content, const IndexArray& positions, std::size_t i0) const {
    const std::size_t B = z.shape()[0], n = z.shape()[2], R = z.shape()[3], T = positions.shape()[1];
    const std::int64_t top = std::int64_t(R) - 1;
    Array out(Shape{B, H_, n, T});
    for (std::size_t b = 0, nb = shape_only() ? 0 : B; b < nb; ++b) {
      const std::int32_t* p = positions.data() + b * T;
      for (std::size_t h = 0; h < H_; ++h) {
        const real* c = content.data() + (b * H_ + h) * T;
        for (std::size_t i = 0; i < n; ++i) {
          const real* zr = z.data() + ((b * H_ + h) * n + i) * R;
          real* o = out.data() + ((b * H_ + h) * n + i) * T;
          const std::int64_t pi = std::int64_t(p[i0 + i]) + offset() - range_.lo;
          for (std::size_t j = 0; j < T; ++j) o[j] = zr[std::clamp<std::int64_t>(pi - p[j], 0, top)] + c[j];
        }
      }
    }
    return out;
  }

  std::size_t H_, hs_, width_;
  double base_;
  bool causal_;
  real scale_;
  std::vector<XlLayer*> layers_;
  SeenPositions seen_;
  IndexArray ids_;  // the ids of the range and the table
  DistanceRange range_;
  Tensor table_;   // (R, 2m) sinusoids of the range's distances
  Tensor index_;   // (B, H, T, T) every pair's distance index, reals (interp_gather's p)
  Tensor tile_keys_, tile_content_;  // the tiled layer's (B, H, hs, R) and (B, H, 1, T)
  std::size_t tile_layer_ = std::size_t(-1);
};

}  // namespace

PELAB_REGISTER_ENCODING(transformer_xl, encoding_spec("transformer_xl",
    "Transformer-XL relative encoding: (q_i + v) . W_R R_{i-j+1} + u . k_j (causal; R_{i-j} bidirectional) with a "
    "fixed sinusoid R of the distance, W_R, u, v learned per layer (Dai et al. 2019, as DeepMind's RELATIVE)")
    .relative()  // a function of id differences only
    .params({
        number_param("base", 10000.0,
            "sinusoid frequencies w_k = base^(-2k/d_model) (DeepMind's max_time)").in(2.0, 1e9),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<TransformerXl>(dims, p.get_number("base"));
    }));

}  // namespace pelab
