// GRAPE-A, additive Group Representational Position Encoding (Zhang et al., "Group Representational
// Position Encoding", ICLR 2026, arXiv 2512.07805, Sec. 4): positions act by a unipotent lift. With
// q^ = [q; 1; 0], k^ = [k; 0; 1] and the nilpotent generator A (A^2 = 0) whose last column is [u; 1; 0],
// G(n) = exp(n omega A) = I + n omega A and
//   q^_i^T G(p_j - p_i) k^_j = q_i . k_j - omega (p_i - p_j) (1 + u . q_i):
// a logit bias linear in the distance, its slope lifted by the query. With the path-integral form (GRAPE-AP)
// the step generators vary along the path, G = prod_{j < l <= i} (I + omega_l A) = I + (sum_l omega_l) A
// (A^2 = 0), and omega_l = -log sigmoid(w_h . x_l + b_h) makes the sum FoX's forget gates. So:
//   bias_ij = -S_ij (1 + u_h . q_i),  S_ij = omega_h (p_i - p_j)           rate = "constant"
//                                     S_ij = -sum_{j < l <= i} log f_l     rate = "gated" (fox.cpp's gates)
// lift = "constant" drops the u term. Exact special cases (tests/layers/test_group_actions.cpp):
// rate constant, lift constant, omega = ALiBi's slopes is ALiBi (alibi.cpp) on every causal logit; rate gated,
// lift constant is FoX (fox.cpp) with the same gate weights. The signed distance (the group law) rewards
// future keys, so the encoding needs causal attention.
// Parameters per layer it runs in: pos.omega.<l> (H) (rate constant, learn; ALiBi's slopes at init),
// pos.gates.<l>.weight (H, C) and .bias (H) (rate gated; FoX's names and init), pos.lift.<l> (H, hs)
// (lift query; 0 at init, so it starts as ALiBi or FoX).
#include <string>

#include "core/ops/cumsum.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/alibi.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

struct GrapeASettings {
  bool gated = false, query_lift = true, learn = true;
  double slope_scale = 1.0, bias_init = 0.0;
};

GrapeASettings grape_a_settings(const Params& p) {
  GrapeASettings s;
  s.gated = p.get_string("rate") == "gated";
  s.query_lift = p.get_string("lift") == "query";
  s.learn = p.get_bool("learn");
  s.slope_scale = p.get_number("slope_scale");
  s.bias_init = p.get_number("bias_init");
  return s;
}

struct Gates : Module {  // FoX's forget-gate projection (fox.cpp's ForgetGate: the same names and init)
  Gates(std::size_t C, std::size_t H, double bias_init) {
    weight = add_parameter("weight", {H, C}, ParamKind::weight, C);
    bias = add_parameter("bias", {H}, ParamKind::bias, [bias_init](Array& v, Rng&) { v.fill(real(bias_init)); });
  }
  Tensor weight, bias;  // (H, C), (H)
};

class GrapeA : public PositionalEncoding {
 public:
  GrapeA(const ModelDims& d, GrapeASettings s) : s_(s), H_(d.n_heads), slopes_(alibi_slopes(d.n_heads)) {
    for (auto& m : slopes_) m *= s.slope_scale;
    const std::vector<double> sl = slopes_;
    for (std::size_t l = 0; l < d.n_layers; ++l) {
      const std::string n = std::to_string(l);
      const bool run = d.runs_in(l);
      gates_.push_back(run && s.gated ? &add_module("gates." + n, std::make_unique<Gates>(d.d_model, H_, s.bias_init))
                                      : nullptr);
      omega_.push_back(run && !s.gated && s.learn
                           ? add_parameter("omega." + n, {H_}, ParamKind::bias,
                                           [sl](Array& v, Rng&) { for (std::size_t h = 0; h < sl.size(); ++h) v(h) = real(sl[h]); })
                           : Tensor());
      lift_.push_back(run && s.query_lift ? add_parameter("lift." + n, {H_, d.head_dim}, ParamKind::bias,
                                                          [](Array& v, Rng&) { v.fill(0); })
                                          : Tensor());
    }
  }
  bool leaves_qk_alone() const override { return !s_.query_lift; }
  bool bias_by_query_rows() const override { return true; }

  // (B or 1, H, T, T): -S_ij (1 + u . q_i); the attention masks the future keys. A query tile (no tape):
  // its rows against every key, q the tile's rows, with the same arithmetic.
  Tensor attention_bias(const Tensor& q, const Tensor&, const AttentionContext& ctx) override {
    const Tensor S = ctx.tile.active() ? Tensor(tile_path(ctx)) : s_.gated ? gated_path(ctx) : constant_path(ctx);
    if (!s_.query_lift) return S;
    const std::size_t hs = q.size(3);
    const Tensor uq = sum(mul(q, reshape(lift_.at(ctx.layer), {1, H_, 1, hs})), {3}, true);  // (B, H, T, 1)
    return mul(S, add_scalar(uq, 1));
  }

 private:
  // -omega_h (p_i - p_j) (rows, H, T, T); fixed omega: built once per forward in double, as ALiBi's bias.
  Tensor constant_path(const AttentionContext& ctx) {
    if (!s_.learn) {
      if (!seen_.same(ctx.positions)) {
        fixed_ = Tensor(fixed_bias(pairwise_difference(ctx.positions, ctx.shared_positions)));
        seen_.set(ctx.positions);
      }
      return fixed_;
    }
    Array d = pairwise_difference(ctx.positions, ctx.shared_positions);  // (rows, T, T): p_i - p_j
    const std::size_t rows = d.shape()[0], T = d.shape()[1];
    d.reshape({rows, 1, T, T});
    return mul(Tensor(std::move(d)), neg(reshape(omega_.at(ctx.layer), {1, H_, 1, 1})));
  }

  // d (rows, Tq, Tk) -> -slope_h d (rows, H, Tq, Tk), in double as ALiBi's
  Array fixed_bias(const Array& d) const {
    const std::size_t rows = d.shape()[0], m = d.shape()[1] * d.shape()[2];
    Array bias(Shape{rows, H_, d.shape()[1], d.shape()[2]});
    real* out = bias.data();
    for (std::size_t b = 0; b < rows; ++b)
      for (std::size_t h = 0; h < H_; ++h)
        for (std::size_t k = 0; k < m; ++k) *out++ = static_cast<real>(-slopes_[h] * double(d.data()[b * m + k]));
    return bias;
  }

  // c_t = sum_{l <= t} log sigmoid(w_h . x_l + b_h) (B, H, T): fox.cpp's arithmetic.
  Tensor cumulative_gates(const AttentionContext& ctx) const {
    if (!ctx.input) throw Error("grape_a: the attention layer gave no input to compute the gates from");
    const Gates& g = *gates_.at(ctx.layer);
    const Tensor log_f = neg(softplus(neg(linear(*ctx.input, g.weight, g.bias))));  // (B, T, H)
    return permute(cumsum(log_f, 1), {0, 2, 1});
  }

  // c_i - c_j (B, H, T, T)
  Tensor gated_path(const AttentionContext& ctx) const {
    const Tensor c = cumulative_gates(ctx);
    const std::size_t B = c.size(0), T = c.size(2);
    return sub(reshape(c, {B, H_, T, 1}), reshape(c, {B, H_, 1, T}));
  }

  // -S for rows [begin, end) against keys [0, keys): (rows or B, H, n, keys), the taped paths' values. Gated:
  // c computed at the layer's first tile and kept for the others (tiles of a layer come in order).
  Array tile_path(const AttentionContext& ctx) {
    const QueryTile& t = ctx.tile;
    const std::size_t n = t.end - t.begin;
    if (!s_.gated) {
      const Array d = pairwise_difference(ctx.positions, ctx.shared_positions, t);  // (rows, n, keys)
      if (!s_.learn) return fixed_bias(d);
      const std::size_t rows = d.shape()[0], m = n * t.keys;
      Array out(Shape{rows, H_, n, t.keys});
      const real* w = omega_.at(ctx.layer).data();
      for (std::size_t b = 0; b < rows; ++b)
        for (std::size_t h = 0; h < H_; ++h)
          for (std::size_t i = 0; i < m; ++i) out.data()[(b * H_ + h) * m + i] = d.data()[b * m + i] * -w[h];
      return out;
    }
    if (t.begin == 0 || tile_layer_ != ctx.layer) {
      tile_c_ = cumulative_gates(ctx).value();
      tile_layer_ = ctx.layer;
    }
    const std::size_t B = tile_c_.shape()[0], T = tile_c_.shape()[2];
    if (t.end > T || t.keys > T) throw Error("grape_a: a query tile beyond the sequence");
    Array out(Shape{B, H_, n, t.keys});
    real* o = out.data();
    for (std::size_t r = 0; r < B * H_; ++r) {
      const real* c = tile_c_.data() + r * T;
      for (std::size_t i = t.begin; i < t.end; ++i)
        for (std::size_t j = 0; j < t.keys; ++j) *o++ = c[i] - c[j];
    }
    return out;
  }

  GrapeASettings s_;
  std::size_t H_;
  std::vector<double> slopes_;
  std::vector<Gates*> gates_;
  std::vector<Tensor> omega_, lift_;
  Tensor fixed_;
  SeenPositions seen_;
  Array tile_c_;  // (B, H, T) c of the layer being tiled (gated)
  std::size_t tile_layer_ = std::size_t(-1);
};

// Declared for the memory estimate until it is derived from a shape-only forward (branch estimate). Q query rows
// per bias (a tile without a tape past kBiasQueryTile). Training, per layer: S (rows or B, H, T, T) and what
// the lift saves of it, the ids' differences (saved by omega's product), FoX's (N, H) gate tensors; the lifted
// bias itself is alive while the attention runs (one layer's). Without a tape everything is one tile's.
EncodingCost grape_a_cost(const Params& p, const ModelDims& d, const ForwardShape& s) {
  const GrapeASettings g = grape_a_settings(p);
  const double T = double(s.tokens), Q = double(s.bias_query_rows()), H = double(d.n_heads), L = double(d.layers_run());
  const double N = double(s.batch) * T, rows = double(s.pair_rows());
  const double Xq = double(s.batch) * H * Q * T, Pr = rows * Q * T, Sx = g.gated ? Xq : rows * H * Q * T;
  const double lift_scratch = double(s.batch) * H * Q * double(d.head_dim);  // q * u before its sum
  EncodingCost c;
  c.parameters = d.layers_run() * (g.gated ? d.n_heads * (d.d_model + 1) : g.learn ? d.n_heads : 0) +
                 (g.query_lift ? d.layers_run() * d.n_heads * d.head_dim : 0);
  c.splits_heads = g.query_lift;
  c.bias_tiles = Q < T;
  const bool once = !g.gated && !g.learn && Q == T;  // fixed omega, whole bias: built once per forward
  if (once) c.input.hold(Sx).add_scratch(Pr);
  if (s.training) {
    if (!g.gated && g.learn) c.layers.hold(Pr, L).hold(Sx, g.query_lift ? L : 1.0);
    if (g.gated) c.layers.hold(N * H, 5.0 * L).hold(Sx, g.query_lift ? L : 1.0);
    if (g.query_lift) c.layers.hold(Xq).add_scratch(lift_scratch);
    c.layers.add_backward(Xq);
    return c;
  }
  if (!once && !g.gated) c.layers.add_scratch(Pr).add_scratch(Sx);
  if (g.gated) c.layers.hold(N * H).add_scratch(N * H, 4.0).add_scratch(Sx);
  if (g.query_lift) c.layers.add_scratch(Xq).add_scratch(lift_scratch);
  return c;
}

PELAB_REGISTER_ENCODING(grape_a, encoding_spec("grape_a",
    "GRAPE-A: logits - S_ij (1 + u.q_i), S = omega (p_i - p_j) or the summed -log forget gates: a unipotent "
    "lift containing ALiBi and FoX (Zhang et al. 2025)")
    .relative()
    .params({
        choice_param("rate", "constant", {"constant", "gated"},
                     "the step generator: constant omega_h per head (ALiBi's slopes at init) or FoX's "
                     "-log sigmoid(w_h . x_l + b_h) per token (the path-integral form)"),
        choice_param("lift", "query", {"query", "constant"},
                     "query: the slope times 1 + u_h . q_i (u learned, 0 at init); constant: no u"),
        bool_param("learn", true, "rate constant: omega learned (false: fixed at the slopes, exactly ALiBi with lift "
                                  "constant)"),
        number_param("slope_scale", 1.0, "rate constant: multiplies ALiBi's slopes, omega's init").in(0.0, 100.0),
        number_param("bias_init", 0.0, "rate gated: the gates' initial bias b (as fox)").in(-20.0, 20.0),
    })
    .validate([](const Params&, const ModelDims& d) {
      if (!d.causal)
        throw Error("encoding 'grape_a' needs causal attention (model.causal = true): its signed distance would "
                    "reward a future key");
    })
    .make([](const Params& p, const ModelDims& d) { return std::make_unique<GrapeA>(d, grape_a_settings(p)); })
    .cost(grape_a_cost));

}  // namespace
}  // namespace pelab
