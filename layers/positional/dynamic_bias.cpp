// Dynamic position bias (x-transformers' DynamicPositionBias, lucidrains/x-transformers
// x_transformers.py; in the spirit of SwinV2's log-spaced continuous position bias): one small MLP,
// shared by every layer, maps the signed log distance of each (query, key) pair to a bias per head,
//   bias[h, i, j] = f( sign(d) log(|d| + 1) )_h,   d = p_i - p_j,
//   f: Linear(1, D) -> SiLU -> (depth - 1) x [Linear(D, D) -> SiLU] -> Linear(D, H),  D = d_model / 4.
// As there: depth 2, no LayerNorm inside, added to the scaled logits. The Linear layers are
// initialized as every pelab Linear. A function of id differences only: relative.
#include <cmath>
#include <string>

#include "core/ops/elementwise.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/basic.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

std::size_t width_of(const ModelDims& d) { return std::max<std::size_t>(1, d.d_model / 4); }

class DynamicBias : public PositionalEncoding {
 public:
  DynamicBias(const ModelDims& dims, std::size_t depth) {
    const std::size_t D = width_of(dims);
    for (std::size_t l = 0; l < depth; ++l)
      hidden_.push_back(&add_module("mlp." + std::to_string(l), std::make_unique<Linear>(l == 0 ? 1 : D, D)));
    out_ = &add_module("mlp." + std::to_string(depth), std::make_unique<Linear>(D, dims.n_heads));
  }
  bool leaves_qk_alone() const override { return true; }
  bool bias_by_query_rows() const override { return true; }

  void begin_forward(const IndexArray&) override { bias_ = Tensor(); }  // the MLP may have changed

  // (1 or B, H, T, T), one for every layer, its distances kept while the ids repeat; a query tile's rows
  // [begin, end) (no tape) built per call, and no (T, T) table then.
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    if (ctx.tile.active())
      return mlp(Tensor(log_distance(pairwise_difference(ctx.positions, ctx.shared_positions, ctx.tile))));
    if (!seen_.same(ctx.positions)) {
      distance_ = Tensor(log_distance(pairwise_difference(ctx.positions, rows_share_positions(ctx.positions))));
      seen_.set(ctx.positions);
      bias_ = Tensor();
    }
    if (!bias_.defined()) bias_ = mlp(distance_);
    return bias_;
  }

 private:
  // d (rows, Tq, Tk) -> sign(d) log(|d| + 1) (rows, Tq, Tk, 1)
  static Array log_distance(Array d) {
    if (!shape_only())  // core/shape_only.hpp: no values
      for (auto& x : d) x = std::copysign(std::log1p(std::abs(x)), x);
    d.reshape({d.shape()[0], d.shape()[1], d.shape()[2], std::size_t(1)});
    return d;
  }

  // (rows, Tq, Tk, 1) -> (rows, H, Tq, Tk)
  Tensor mlp(const Tensor& distance) const {
    Tensor h = distance;
    for (const Linear* l : hidden_) {
      const Tensor a = l->forward(h);
      h = mul(a, sigmoid(a));  // SiLU
    }
    return permute(out_->forward(h), {0, 3, 1, 2});  // (rows, Tq, Tk, H) -> (rows, H, Tq, Tk)
  }

  std::vector<Linear*> hidden_;
  Linear* out_;
  SeenPositions seen_;
  Tensor distance_, bias_;
};

PELAB_REGISTER_ENCODING(dynamic_bias, encoding_spec("dynamic_bias",
    "an MLP of the signed log distance, one bias per head, shared by the layers (x-transformers' DynamicPositionBias)")
    .relative()
    .params({integer_param("depth", 2, "hidden layers of the MLP (each Linear -> SiLU), width d_model / 4")
                 .in(1.0, 8.0)})
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<DynamicBias>(dims, std::size_t(p.get_int("depth")));
    }));

}  // namespace
}  // namespace pelab
