// FoX, the Forgetting Transformer (Lin et al., "Forgetting Transformer: Softmax Attention with a Forget
// Gate", ICLR 2025; "data-dependent ALiBi"): each head of each layer has a forget gate computed from the
// layer's input, f_t = sigmoid(w_h . x_t + b_h), and the logits get the log of the gates between key and query,
//   D_ij = sum_{j < l <= i} log f_l = c_i - c_j,   c_t = sum_{l <= t} log f_l   (a cumulative sum over tokens).
// x_t is the attention's input (after the block's LayerNorm: AttentionContext::input). With every f = e^-m
// it is ALiBi with slope m; learned from content, a head can keep or forget. The gate projection is a
// trainable (H, C) weight and (H) bias per layer (pos.gates.<l>.weight / .bias); bias_init sets b's start
// (the default 0 starts every head at f = 1/2). The "Pro" variant's output gate, QK-norm and KV-shift are
// not included. Position ids are never read: relative.
#include <string>

#include "core/shape_only.hpp"
#include "core/ops/cumsum.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

struct ForgetGate : Module {
  ForgetGate(std::size_t C, std::size_t H, double bias_init) {
    weight = add_parameter("weight", {H, C}, ParamKind::weight, C);
    bias = add_parameter("bias", {H}, ParamKind::bias, [bias_init](Array& v, Rng&) { v.fill(real(bias_init)); });
  }
  Tensor weight, bias;  // (H, C), (H)
};

class Fox : public PositionalEncoding {
 public:
  Fox(const ModelDims& dims, double bias_init) : H_(dims.n_heads) {
    for (std::size_t l = 0; l < dims.n_layers; ++l)  // null: a layer the layout gives another encoding
      gates_.push_back(!dims.runs_in(l) ? nullptr :
                       &add_module("gates." + std::to_string(l),
                                   std::make_unique<ForgetGate>(dims.d_model, dims.n_heads, bias_init)));
  }
  bool leaves_qk_alone() const override { return true; }  // the bias reads x, not q or k
  bool bias_by_query_rows() const override { return true; }

  // (B, H, T, T): c_i - c_j; the attention masks the future keys (where it is not a log of gates). A
  // query tile (no tape): rows [begin, end) of it against every key, from c computed once per layer.
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    if (!ctx.input) throw Error("fox: the attention layer gave no input to compute the forget gates from");
    if (ctx.tile.active()) return Tensor(tile_bias(ctx));
    const Tensor c = cumulative_gates(*ctx.input, ctx.layer);  // (B, H, T)
    const std::size_t B = c.size(0), T = c.size(2);
    return sub(reshape(c, {B, H_, T, 1}), reshape(c, {B, H_, 1, T}));  // (B, H, T, T)
  }

 private:
  // c_t = sum_{l <= t} log f_l per head: (B, H, T) from x (B, T, C)
  Tensor cumulative_gates(const Tensor& x, std::size_t layer) const {
    const ForgetGate& g = *gates_.at(layer);
    const Tensor log_f = neg(softplus(neg(linear(x, g.weight, g.bias))));  // log sigmoid: (B, T, H)
    return permute(cumsum(log_f, 1), {0, 2, 1});                           // (B, H, T)
  }

  // (B, H, end - begin, keys): c_i - c_j for the tile's queries i. The layer's c is computed at its first
  // tile (begin 0) and kept for the others: the tiles of one layer come in order with the same input.
  Array tile_bias(const AttentionContext& ctx) {
    const QueryTile& t = ctx.tile;
    if (t.begin == 0 || tile_layer_ != ctx.layer) {
      tile_c_ = array_copy(cumulative_gates(*ctx.input, ctx.layer).value());
      tile_layer_ = ctx.layer;
    }
    const std::size_t B = tile_c_.shape()[0], T = tile_c_.shape()[2], n = t.end - t.begin;
    if (t.end > T || t.keys > T) throw Error("fox: a query tile beyond the sequence");
    Array bias(Shape{B, H_, n, t.keys});
    real* out = bias.data();
    for (std::size_t r = 0, m = shape_only() ? 0 : B * H_; r < m; ++r) {  // core/shape_only.hpp
      const real* c = tile_c_.data() + r * T;
      for (std::size_t i = t.begin; i < t.end; ++i)
        for (std::size_t j = 0; j < t.keys; ++j) *out++ = c[i] - c[j];
    }
    return bias;
  }

  std::size_t H_;
  std::vector<ForgetGate*> gates_;
  Array tile_c_;                  // (B, H, T) c of the layer being tiled
  std::size_t tile_layer_ = std::size_t(-1);
};

PELAB_REGISTER_ENCODING(fox, encoding_spec("fox",
    "FoX forget gates: logits + sum of log sigmoid(w_h . x_l + b_h) over the tokens between key and query (Lin et al. 2025)")
    .relative()  // position ids are never read
    .params({number_param("bias_init", 0.0, "initial gate bias b: f = sigmoid(w.x + b) starts near sigmoid(b) (0: 1/2)")
         .in(-20.0, 20.0)})
    .validate([](const Params&, const ModelDims& dims) {  // the gates sum over the tokens between key and query, in order
      if (!dims.causal) throw Error("fox needs causal attention (model.causal = true): a future key would get a bonus");
    })
    .make([](const Params& p, const ModelDims& dims) { return std::make_unique<Fox>(dims, p.get_number("bias_init")); })
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
