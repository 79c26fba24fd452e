// CoPE (Golovneva et al. 2024, "Contextual Position Encoding: Learning to Count What's Important"):
// positions counted by the content. Every head of layer l, for query i and key j <= i:
//   g_it = sigmoid(q_i . k_t / sqrt(hs))                      does key t count for query i?
//   p_ij = sum_{t=j..i} g_it                                  a fractional count (reversed cumsum)
//   bias_ij = ((1 - f) q_i . e[floor p_ij] + f q_i . e[ceil p_ij]) / sqrt(hs),  f = p_ij - floor p_ij
// with learned position embeddings e (npos, hs) per layer, shared by the heads, and p clamped to
// npos - 1. As the authors' code (facebookresearch/RAM, projects/cope/src/cope/context_position.py):
// the gates divide q . k by sqrt(head_dim), future keys' gates are masked to 0 before the cumsum, the
// interpolated logits are added before the division by sqrt(head_dim) (their default, not --cope-nodiv),
// npos defaults to the training length + 1 (p reaches T when every gate is 1) and e starts at zero.
// It enters through attention_bias(q, k): the gates need q and k (after encode_qk). The logits for
// every e[m] at once are z = q e^T (B, H, T, npos), and interp_gather reads them at p (clamping p to
// [0, npos - 1] itself). The counts ignore position ids entirely, so a shift of the ids changes
// nothing (declared relative) -- and so does any other change of ids. Causal models only: with
// bidirectional attention the count over "keys up to the query" has no meaning.
#include <cmath>

#include "core/shape_only.hpp"
#include "core/ops/cumsum.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/interp_gather.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

std::size_t positions_count(const Params& p, const ModelDims& dims) {
  const std::int64_t n = p.get_int("npos");
  return n > 0 ? std::size_t(n) : dims.train_seq_len + 1;
}

void check(const Params& p, const ModelDims& dims) {
  if (!dims.causal)
    throw Error("encoding 'cope': needs causal attention (model.causal = true): it counts the keys up to each query");
  if (p.get_int("npos") == 1)
    throw Error("encoding 'cope': npos 1 gives every pair the same position; use 0 (the training length + 1) or >= 2");
}

struct CopeTable : Module {
  CopeTable(std::size_t npos, std::size_t hs) {
    weight = add_parameter("weight", {npos, hs}, ParamKind::embedding,
                           [](Array& a, Rng&) { a.fill(real(0)); });  // zero, as the authors
  }
  Tensor weight;  // (npos, hs)
};

class Cope : public PositionalEncoding {
 public:
  Cope(const ModelDims& dims, std::size_t npos, bool shared_layers)
      : shared_layers_(shared_layers), scale_(real(1) / std::sqrt(real(dims.head_dim))) {
    for (std::size_t l = 0; l < (shared_layers ? 1 : dims.n_layers); ++l)  // pos.tables.<l>.weight; null: not run
      tables_.push_back(!dims.makes_table(l, shared_layers) ? nullptr :
                        &add_module("tables." + std::to_string(l), std::make_unique<CopeTable>(npos, dims.head_dim)));
  }

  // Each query's counts depend on its own row only: a query tile gives its rows (no tape).
  bool bias_by_query_rows() const override { return true; }

  // (B, H, Tq, T): the interpolated position logits, already divided by sqrt(hs); Tq = T, or a query
  // tile's rows [begin, end) (q holds just those).
  Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) override {
    const std::size_t Tq = q.shape()[2], T = k.shape()[2], first = ctx.tile.active() ? ctx.tile.begin : 0;
    if (ctx.tile.active() ? ctx.tile.end - first != Tq || ctx.tile.keys != T : T != Tq)
      throw Error("encoding 'cope': needs self-attention (as many keys as queries)");
    const Tensor& e = tables_.at(shared_layers_ ? 0 : ctx.layer)->weight;
    const Tensor qs = mul_scalar(q, scale_);  // q / sqrt(hs): (B, H, Tq, hs)
    // Gates and counts are built transposed, keys along axis 2: the reversed cumsum over keys then runs
    // over contiguous rows of queries (vectorized; over the last axis it is one serial chain per row,
    // measured ~15x slower at T = 64), and one permute brings the counts back to (query, key).
    const Tensor gates_t = mul(sigmoid(matmul(k, qs, false, true)), causal_mask_t(T, first, Tq));  // g_ij at [j, i]
    const Tensor counts = permute(cumsum(gates_t, 2, /*reverse=*/true), {0, 1, 3, 2});  // p_ij = sum_{t >= j} g_it
    return interp_gather(matmul(qs, e, false, true), counts);  // z (B, H, Tq, npos) read at p: (B, H, Tq, T)
  }

 private:
  // (1, 1, Tk, Tq): 1 where key j <= query first + i (at [j, i]), else 0; kept while the shape and the
  // first query do not change.
  const Tensor& causal_mask_t(std::size_t Tk, std::size_t first, std::size_t Tq) {
    if (!mask_t_.defined() || mask_t_.shape()[2] != Tk || mask_t_.shape()[3] != Tq || mask_first_ != first) {
      Array m(Shape{1, 1, Tk, Tq});
      for (std::size_t j = 0, n = shape_only() ? 0 : Tk; j < n; ++j)  // core/shape_only.hpp
        for (std::size_t i = 0; i < Tq; ++i) m(0, 0, j, i) = j <= first + i ? real(1) : real(0);
      mask_t_ = Tensor(std::move(m));
      mask_first_ = first;
    }
    return mask_t_;
  }

  bool shared_layers_;
  real scale_;
  std::vector<CopeTable*> tables_;
  Tensor mask_t_;
  std::size_t mask_first_ = 0;
};

}  // namespace

PELAB_REGISTER_ENCODING(cope, encoding_spec("cope",
    "contextual positions: sigmoid gates on q.k counted from each key to the query, "
    "interpolated learned position logits (Golovneva et al. 2024)")
    .relative()  // ignores position ids altogether: every shift (any change) of the ids leaves the logits unchanged
    .params({
        integer_param("npos", 0,
            "position embeddings per layer; counts clamp to npos - 1; 0: the training length + 1").in(0.0, 1e6),
        bool_param("shared_layers", false,
            "one embedding table for all layers; false: one per layer (as the authors)"),
    })
    .validate(check)
    .make([](const Params& p, const ModelDims& dims) {
      check(p, dims);
      return std::make_unique<Cope>(dims, positions_count(p, dims), p.get_bool("shared_layers"));
    })
    .reads_position_ids(false));

}  // namespace pelab
