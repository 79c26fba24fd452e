// Selective attention (Leviathan, Kalman and Matias, "Selective Attention Improves Transformer", ICLR
// 2025): earlier queries may mask a key for every later query. Head 0's scaled logits L = q k^T / sqrt(hs)
// select: S = ReLU(L) on the past keys (a query never masks itself, nor key 0, the first token), and
// query i's logits lose what the queries before it selected,
//   F_ij = sum_{k < i} S_kj,   logits_ij -= F_ij   in every head (head 0's too).
// No parameters. Follows x-transformers (x_transformers/attend.py, selective_attn, which cites the paper's
// section 3.3); no official code was found. Position ids are never read: relative. Causal models only.
#include <cmath>

#include "core/shape_only.hpp"
#include "core/ops/cumsum.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

class Selective : public PositionalEncoding {
 public:
  bool bias_by_query_rows() const override { return true; }

  // (B, 1, T, T): -F, shared by the heads. A query tile (no tape): its rows, from head 0's logits of its
  // queries and a running sum over the earlier queries.
  Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) override {
    const std::size_t T = q.size(2), hs = q.size(3);
    const Tensor q0 = slice(q, 1, 0, 1), k0 = slice(k, 1, 0, 1);                    // (B, 1, Tq, hs)
    const Tensor logits = mul_scalar(matmul(q0, k0, false, true), real(1) / std::sqrt(real(hs)));  // (B, 1, Tq, T)
    if (ctx.tile.active()) return Tensor(tile_bias(relu(logits).value(), ctx));
    const Tensor S = mul(relu(logits), selectable(T));                              // (B, 1, T, T)
    return sub(S, cumsum(S, 2));                                                   // -(sum over k < i)
  }

 private:
  // (B, 1, rows, T): -F_ij = -sum_{k < i} S_kj for the tile's queries i, from R = ReLU(head 0's logits) of
  // its rows (B, 1, rows, T). F at the tile's first row is carried from the layer's earlier tiles (they
  // come in order; a tile that starts inside the previous one, as the last tile does, takes its
  // overlapping rows back out of the sum).
  Array tile_bias(const Array& R, const AttentionContext& ctx) {
    const QueryTile& t = ctx.tile;
    const std::size_t B = R.shape()[0], n = R.shape()[2], T = R.shape()[3];
    if (t.begin == 0) carry_ = shape_only() ? Array(Shape{B, T}) : Array(Shape{B, T}, real(0)), carried_ = 0, carry_layer_ = ctx.layer;
    if (carry_layer_ != ctx.layer || t.begin > carried_ || t.end - t.begin != n || carry_.shape()[1] != T)
      throw Error("selective: query tiles must come in order from row 0 within a layer");
    // S_kj = R_kj where 0 < j < k (a query masks neither itself, later keys, nor key 0)
    const auto S = [](const real* row, std::size_t k, std::size_t j) { return j > 0 && j < k ? row[j] : real(0); };
    Array bias(Shape{B, 1, n, T});
    for (std::size_t b = 0, nb = shape_only() ? 0 : B; b < nb; ++b) {  // core/shape_only.hpp
      real* F = carry_.data() + b * T;
      const real* rows = R.data() + b * n * T;
      for (std::size_t k = t.begin; k < carried_; ++k)  // rows this tile repeats
        for (std::size_t j = 0; j < T; ++j) F[j] -= S(rows + (k - t.begin) * T, k, j);
      real* out = bias.data() + b * n * T;
      for (std::size_t i = t.begin; i < t.end; ++i) {
        const real* row = rows + (i - t.begin) * T;
        for (std::size_t j = 0; j < T; ++j) out[(i - t.begin) * T + j] = -F[j], F[j] += S(row, i, j);
      }
    }
    carried_ = t.end;
    return bias;
  }

  // (1, 1, T, T): 1 where query k may mask key j: j < k (past keys, not itself) and j > 0 (not the first)
  const Tensor& selectable(std::size_t T) {
    if (mask_.defined() && mask_.size(2) == T) return mask_;
    Array m(Shape{1, 1, T, T});
    for (std::size_t i = 0, n = shape_only() ? 0 : T; i < n; ++i)
      for (std::size_t j = 0; j < T; ++j) m(0, 0, i, j) = real(j < i && j > 0);
    mask_ = Tensor(std::move(m));
    return mask_;
  }
  Tensor mask_;
  Array carry_;  // (B, T): F of the next query, the sum of S over the queries before it
  std::size_t carried_ = 0, carry_layer_ = 0;
};

PELAB_REGISTER_ENCODING(selective, encoding_spec("selective",
    "selective attention: head 0's positive logits let earlier queries mask a key for every later one (Leviathan et al. 2025)")
    .relative()  // position ids are never read
    .validate([](const Params&, const ModelDims& dims) {
      if (!dims.causal) throw Error("selective needs causal attention (model.causal = true)");
    })
    .make([](const Params&, const ModelDims&) { return std::make_unique<Selective>(); })
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
