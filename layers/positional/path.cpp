// PaTH attention (Yang et al., "PaTH Attention: Position Encoding via Accumulating Householder
// Transformations", NeurIPS 2025): between key j and query i every token t in (j, i] applies a
// data-dependent Householder-like transform H_t = I - beta_t w_t w_t^T to the key,
//   logit_ij = q_i . (H_i H_{i-1} ... H_{j+1} k_j) / sqrt(hs),
// with w_t and beta_t computed from the layer's input x_t as the authors' code (flash-linear-attention
// fla/layers/path_attn.py): w = a low-rank projection C -> 32 -> C, a causal depthwise convolution of
// width 3 with SiLU, then L2-normalized per head; beta = 2 sigmoid(Linear(x)) in (0, 2) per head. Only
// the keys are transformed. Computed as the authors' decoding recurrence (each arriving token transforms
// every earlier key), O(T^2 hs) per (batch, head), in one fused op (core/ops/path_keys.hpp): its tape node
// saves q, k, w and beta only, and backward recomputes the keys per (batch, head) in a per-thread scratch
// of about T^2 / 2 + 4 T hs reals. pelab returns it as an additive bias, q_i . (k_j^(i) - k_j) / sqrt(hs),
// on top of the attention's own q_i . k_j / sqrt(hs). [attention] scalings multiply only the plain term:
// use PaTH with scaling = "none". The blocked (UT-transform) form of the paper is not implemented.
// Position ids are never read: relative.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/ops/attention.hpp"
#include "core/ops/causal_conv.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/path_keys.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

constexpr std::size_t kRank = 32, kConv = 3;  // the authors' low rank of w's projection, conv width
constexpr real kNormEps = real(1e-6);

struct PathLayer : Module {
  PathLayer(std::size_t C, std::size_t H) {
    w_down = add_parameter("w_down.weight", {kRank, C}, ParamKind::weight, C);
    w_up = add_parameter("w_up.weight", {C, kRank}, ParamKind::weight, kRank);
    conv = add_parameter("conv.weight", {C, 1, kConv}, ParamKind::weight, kConv);
    beta_w = add_parameter("beta.weight", {H, C}, ParamKind::weight, C);
    beta_b = add_parameter("beta.bias", {H}, ParamKind::bias);
  }
  Tensor w_down, w_up, conv, beta_w, beta_b;
};

class Path : public PositionalEncoding {
 public:
  Path(const ModelDims& dims) : H_(dims.n_heads) {
    for (std::size_t l = 0; l < dims.n_layers; ++l)  // null: a layer the layout gives another encoding
      layers_.push_back(!dims.runs_in(l) ? nullptr :
                        &add_module("layers." + std::to_string(l), std::make_unique<PathLayer>(dims.d_model, H_)));
  }

  bool bias_by_query_rows() const override { return true; }

  // (B, H, T, T); a query tile (no tape): (B, H, end - begin, T), its rows.
  Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) override {
    if (!ctx.input) throw Error("path: the attention layer gave no input to compute w and beta from");
    if (ctx.tile.active()) return Tensor(tile_bias(q, k, ctx));
    Tensor w, beta;
    directions_and_gates(ctx, w, beta);
    return path_key_bias(q, k, w, beta, real(1) / std::sqrt(real(k.size(3))));  // (B, H, T, T)
  }

 private:
  // w (B, H, T, hs) and beta (B, H, T) of the layer, from its input x (B, T, C).
  void directions_and_gates(const AttentionContext& ctx, Tensor& w, Tensor& beta) const {
    const PathLayer& p = *layers_.at(ctx.layer);
    const Tensor& x = *ctx.input;
    w = directions(p, x, x.size(0), x.size(1));
    beta = permute(mul_scalar(sigmoid(linear(x, p.beta_w, p.beta_b)), 2), {0, 2, 1});
  }

  // The tile's rows. The layer's first tile (begin 0) computes w and beta and starts the keys; later
  // tiles of the layer come in order with the same input (SelfAttention::attention_by_tiles) and carry
  // the keys on. The last tile, moved back to stay full, repeats rows the caller drops: 0 here. After
  // the last row the layer's state is freed.
  Array tile_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) {
    const QueryTile& t = ctx.tile;
    if (t.begin == 0 || tile_layer_ != ctx.layer) {
      Tensor w, beta;
      directions_and_gates(ctx, w, beta);
      tile_w_ = array_copy(w.value()), tile_beta_ = array_copy(beta.value());
      tile_keys_ = path_keys_start(k.value());
      tile_layer_ = ctx.layer;
    }
    if (t.keys != tile_keys_.T) throw Error("path: a query tile must see every key");
    Array rows = path_key_bias_rows(q.value(), tile_w_, tile_beta_, real(1) / std::sqrt(real(k.size(3))),
                                    tile_keys_, t.begin, t.end);
    if (t.end == tile_keys_.T) tile_w_ = Array(), tile_beta_ = Array(), tile_keys_ = PathKeys(), tile_layer_ = std::size_t(-1);
    return rows;
  }

  // w (B, H, T, hs): the low-rank projection, the causal depthwise convolution (tap kConv - 1 is the
  // current token, as torch's Conv1d with padding kConv - 1), SiLU, then L2-normalized per head.
  Tensor directions(const PathLayer& p, const Tensor& x, std::size_t B, std::size_t T) const {
    const Tensor u = linear(linear(x, p.w_down), p.w_up);  // (B, T, C)
    const std::size_t C = u.size(2);
    const Tensor conv = causal_depthwise_conv(u, p.conv);  // (B, T, C)
    const Tensor a = mul(conv, sigmoid(conv));                                       // SiLU
    const Tensor w = permute(reshape(a, {B, T, H_, C / H_}), {0, 2, 1, 3});          // (B, H, T, hs)
    return div(w, sqrt(add_scalar(sum(mul(w, w), {3}, true), kNormEps)));
  }
  std::size_t H_;
  std::vector<PathLayer*> layers_;
  Array tile_w_, tile_beta_;  // the layer being tiled: w (B, H, T, hs), beta (B, H, T)
  PathKeys tile_keys_;        // and its keys as the last tile left them
  std::size_t tile_layer_ = std::size_t(-1);
};

PELAB_REGISTER_ENCODING(path, encoding_spec("path",
    "PaTH: keys transformed by the Householder-like I - beta w w^T of every token between key and query, from the layer input (Yang et al. 2025)")
    .relative()  // position ids are never read
    .validate([](const Params&, const ModelDims& dims) {
      if (!dims.causal) throw Error("path needs causal attention (model.causal = true)");
    })
    .make([](const Params&, const ModelDims& dims) { return std::make_unique<Path>(dims); })
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
