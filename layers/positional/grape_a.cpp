// GRAPE-A, additive Group Representational Position Encoding (Zhang et al., "Group Representational
// Position Encoding", ICLR 2026, arXiv 2512.07805, Sec. 4; the authors' model/llama-mha-grape-a-*.py in
// github.com/model-architectures/GRAPE): positions act by a unipotent lift. With a nilpotent generator A
// (A^2 = 0), G(n) = exp(n omega A) = I + n omega A, and the lifted vectors
//   q^ = [q; g_q(q); 1; 0; 0],  k^ = [k; 0; 0; 1; g_k(k)],  A = E_{hs, hs+2} + E_{hs+1, hs+3},
//   q^_i^T G(p_j - p_i) k^_j = q_i . k_j - omega_h (p_i - p_j) (g_q(q_i) + g_k(k_j))     (eq. 4.6)
// with the paper's content gates g_q(q) = softplus(v^_h . q / sqrt(hs)), g_k(k) = softplus(u^_h . k / sqrt(hs))
// (v^, u^ the learned vectors L2-normalized, as the code's querykeygated file) and omega_h = softplus(theta_h)
// slope_h >= 0 (the code's "softplus to ensure omega_h >= 0 (paper's monotonic penalty)"). The group law
// G(s)^-1 G(t) = G(t - s) holds exactly, so the bias is a function of p_i - p_j and the two tokens' contents;
// it is a penalty, never a reward, for every past key (omega, g >= 0). lift picks the gates: query_key
// (eq. 4.6, llama-mha-grape-a-querykeygated.py), query (querygated.py), key (keygated.py), constant (g = 1:
// no gate). With the path-integral form the step generators vary along the path,
// G = prod_{j < l <= i} (I + omega_l A) = I + (sum_l omega_l) A (A^2 = 0), and omega_l = -log sigmoid(w_h . x_l
// + b_h) makes the sum FoX's forget gates (rate = "gated"; FoX is the endpoint-independent special case of
// the paper's GRAPE-AP, Sec. 5, whose edge potential also depends on the query endpoint; GRAPE-AP itself,
// llama-mha-grape-ap-v1.py, is not built). There S_ij is a sum over the tokens between, not a function of
// p_i - p_j: the law holds along the path (a cocycle), not per distance. So:
//   bias_ij = -S_ij g_ij,  S_ij = omega_h (p_i - p_j)                      rate = "constant"
//                          S_ij = -sum_{j < l <= i} log f_l                rate = "gated" (fox.cpp's gates)
//   g_ij = g_q(q_i) + g_k(k_j) (query_key), g_q(q_i) (query), g_k(k_j) (key), 1 (constant).
// Gated rate with a content gate is pelab's composition (the authors gate the constant rate only).
// Exact special cases (tests/layers/test_group_actions.cpp): rate constant, lift constant, omega = ALiBi's
// slopes is ALiBi (alibi.cpp) on every causal logit; rate gated, lift constant is FoX (fox.cpp) with the
// same gate weights. The signed distance rewards future keys, so the encoding needs causal attention.
// Parameters per layer it runs in: pos.omega.<l> (H) (rate constant, learn: theta, softplus^-1(1) at init so
// omega = ALiBi's slopes), pos.gates.<l>.weight (H, C) and .bias (H) (rate gated; FoX's names and init),
// pos.query_gate.<l> and pos.key_gate.<l> (H, hs) (v and u; N(0, 1/hs) at init as the code's, normalized
// in use, so at init g ~ log 2 per gate). Not decayed (ParamKind::bias).
#include <cmath>
#include <limits>
#include <string>

#include "core/ops/cumsum.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "core/shape_only.hpp"
#include "layers/positional/alibi.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

struct GrapeASettings {
  bool gated = false, query_gate = true, key_gate = true, learn = true;
  double slope_scale = 1.0, bias_init = 0.0;
};

GrapeASettings grape_a_settings(const Params& p) {
  GrapeASettings s;
  const std::string lift = p.get_string("lift");
  s.gated = p.get_string("rate") == "gated";
  s.query_gate = lift == "query" || lift == "query_key";
  s.key_gate = lift == "key" || lift == "query_key";
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

// theta = softplus^-1(1): omega = softplus(theta) slope = the slope at init (the code's omega_init = 1)
const double kThetaInit = std::log(std::expm1(1.0));

// softplus(v^_h . x / sqrt(hs)) (B, H, T, 1) for x (B, H, T, hs), v (H, hs) normalized as F.normalize (eps 1e-6)
Tensor content_gate(const Tensor& x, const Tensor& v) {
  const std::size_t H = v.size(0), hs = v.size(1);
  const Tensor norm = clamp(sqrt(sum(square(v), {1}, true)), real(1e-6), std::numeric_limits<real>::max());  // (H, 1)
  const Tensor vn = reshape(div(v, norm), {1, H, 1, hs});
  return softplus(mul_scalar(sum(mul(x, vn), {3}, true), real(1 / std::sqrt(double(hs)))));
}

class GrapeA : public PositionalEncoding {
 public:
  GrapeA(const ModelDims& d, GrapeASettings s) : s_(s), H_(d.n_heads), slopes_(alibi_slopes(d.n_heads)) {
    for (auto& m : slopes_) m *= s.slope_scale;
    Array sl(Shape{H_});
    for (std::size_t h = 0, n = shape_only() ? 0 : H_; h < n; ++h) sl(h) = real(slopes_[h]);  // core/shape_only.hpp
    slope_tensor_ = Tensor(std::move(sl));
    for (std::size_t l = 0; l < d.n_layers; ++l) {
      const std::string n = std::to_string(l);
      const bool run = d.runs_in(l);
      gates_.push_back(run && s.gated ? &add_module("gates." + n, std::make_unique<Gates>(d.d_model, H_, s.bias_init))
                                      : nullptr);
      omega_.push_back(run && !s.gated && s.learn
                           ? add_parameter("omega." + n, {H_}, ParamKind::bias, [](Array& v, Rng&) { v.fill(real(kThetaInit)); })
                           : Tensor());
      query_gate_.push_back(run && s.query_gate ? gate_vector("query_gate." + n, d.head_dim) : Tensor());
      key_gate_.push_back(run && s.key_gate ? gate_vector("key_gate." + n, d.head_dim) : Tensor());
    }
  }
  bool leaves_qk_alone() const override { return !s_.query_gate && !s_.key_gate; }
  bool bias_by_query_rows() const override { return true; }

  // (B or 1, H, T, T): -S_ij g_ij; the attention masks the future keys. A query tile (no tape): its rows
  // against every key, q the tile's rows, k every key, with the same arithmetic.
  Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) override {
    const Tensor S = ctx.tile.active() ? Tensor(tile_path(ctx)) : s_.gated ? gated_path(ctx) : constant_path(ctx);
    if (!s_.query_gate && !s_.key_gate) return S;
    Tensor g;  // (B, H, Tq, 1), (B, H, 1, Tk) or their sum (B, H, Tq, Tk)
    if (s_.query_gate) g = content_gate(q, query_gate_.at(ctx.layer));
    if (s_.key_gate) {
      const Tensor row = key_row(k, ctx);  // (B, H, 1, Tk)
      g = g.defined() ? add(g, row) : row;
    }
    return mul(S, g);
  }

 private:
  Tensor gate_vector(const std::string& name, std::size_t hs) {
    return add_parameter(name, {H_, hs}, ParamKind::bias, [hs](Array& v, Rng& rng) {
      for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = real(rng.normal() / std::sqrt(double(hs)));
    });
  }

  // g_k (B, H, 1, Tk); query tiles: computed at the layer's first tile and kept for the others
  Tensor key_row(const Tensor& k, const AttentionContext& ctx) {
    const bool tile = ctx.tile.active();
    if (tile && ctx.tile.begin != 0 && key_layer_ == ctx.layer) return Tensor(array_copy(key_row_));
    const Tensor gk = content_gate(k, key_gate_.at(ctx.layer));  // (B, H, Tk, 1)
    const Tensor row = reshape(gk, {gk.size(0), H_, 1, gk.size(2)});
    if (tile) key_row_ = array_copy(row.value()), key_layer_ = ctx.layer;
    return row;
  }

  // omega_h = softplus(theta_h) slope_h (H)
  Tensor omega(std::size_t layer) const { return mul(softplus(omega_.at(layer)), slope_tensor_); }

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
    return mul(Tensor(std::move(d)), neg(reshape(omega(ctx.layer), {1, H_, 1, 1})));
  }

  // d (rows, Tq, Tk) -> -slope_h d (rows, H, Tq, Tk), in double as ALiBi's
  Array fixed_bias(const Array& d) const {
    const std::size_t rows = d.shape()[0], m = d.shape()[1] * d.shape()[2];
    Array bias(Shape{rows, H_, d.shape()[1], d.shape()[2]});
    real* out = bias.data();
    for (std::size_t b = 0, nb = shape_only() ? 0 : rows; b < nb; ++b)  // core/shape_only.hpp: no values
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
      const Tensor om = omega(ctx.layer);  // no tape here: the taped path's values
      const real* w = om.data();
      for (std::size_t b = 0, nb = shape_only() ? 0 : rows; b < nb; ++b)
        for (std::size_t h = 0; h < H_; ++h)
          for (std::size_t i = 0; i < m; ++i) out.data()[(b * H_ + h) * m + i] = d.data()[b * m + i] * -w[h];
      return out;
    }
    if (t.begin == 0 || tile_layer_ != ctx.layer) {
      tile_c_ = array_copy(cumulative_gates(ctx).value());
      tile_layer_ = ctx.layer;
    }
    const std::size_t B = tile_c_.shape()[0], T = tile_c_.shape()[2];
    if (t.end > T || t.keys > T) throw Error("grape_a: a query tile beyond the sequence");
    Array out(Shape{B, H_, n, t.keys});
    real* o = out.data();
    for (std::size_t r = 0, nr = shape_only() ? 0 : B * H_; r < nr; ++r) {
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
  Tensor slope_tensor_;                       // (H) the slopes as omega's factor
  std::vector<Tensor> omega_, query_gate_, key_gate_;  // per layer; undefined where unused
  Tensor fixed_;
  SeenPositions seen_;
  Array tile_c_;  // (B, H, T) c of the layer being tiled (gated)
  std::size_t tile_layer_ = std::size_t(-1);
  Array key_row_;  // (B, H, 1, T) g_k of the layer being tiled
  std::size_t key_layer_ = std::size_t(-1);
};

PELAB_REGISTER_ENCODING(grape_a, encoding_spec("grape_a",
    "GRAPE-A: logits - S_ij (softplus(v.q_i/sqrt hs) + softplus(u.k_j/sqrt hs)), S = omega (p_i - p_j) or the "
    "summed -log forget gates: a unipotent lift containing ALiBi and FoX (Zhang et al. 2025, eq. 4.6)")
    .relative()
    .params({
        choice_param("rate", "constant", {"constant", "gated"},
                     "the step generator: constant omega_h = softplus(theta_h) slope_h >= 0 per head (ALiBi's "
                     "slopes at init) or FoX's "
                     "-log sigmoid(w_h . x_l + b_h) per token (the path-integral form)"),
        choice_param("lift", "query_key", {"query_key", "query", "key", "constant"},
                     "the content gate of the slope: query_key softplus(v^.q_i/sqrt hs) + softplus(u^.k_j/sqrt hs) "
                     "(the paper's eq. 4.6), query or key one of them (the authors' querygated, keygated), "
                     "constant 1 (ALiBi, FoX)"),
        bool_param("learn", true, "rate constant: theta learned (false: omega fixed at the slopes, exactly ALiBi "
                                  "with lift constant)"),
        number_param("slope_scale", 1.0, "rate constant: multiplies ALiBi's slopes, omega's init").in(0.0, 100.0),
        number_param("bias_init", 0.0, "rate gated: the gates' initial bias b (as fox)").in(-20.0, 20.0),
    })
    .validate([](const Params&, const ModelDims& d) {
      if (!d.causal)
        throw Error("encoding 'grape_a' needs causal attention (model.causal = true): its signed distance would "
                    "reward a future key");
    })
    .make([](const Params& p, const ModelDims& d) { return std::make_unique<GrapeA>(d, grape_a_settings(p)); }));

}  // namespace
}  // namespace pelab
