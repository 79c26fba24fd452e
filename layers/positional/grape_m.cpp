// GRAPE-M, multiplicative Group Representational Position Encoding, commuting case (Zhang et al.,
// "Group Representational Position Encoding", ICLR 2026, arXiv 2512.07805, Sec. 3.1; the authors'
// model/llama-mha-grape-m-nonctx.py): a position p acts on q and k as G(p) = exp(p sum_i omega_i L_i), the
// L_i rank-2 skew generators of the hs/2 canonical coordinate planes, so G(p) rotates plane i by p omega_i
// (Rodrigues' closed form: learned_rotation.hpp) and <G(p_i) q, G(p_j) k> = <q, G(p_j - p_i) k>: relative.
// The omega are learned: this is RoPE with trainable frequencies (learn = false is RoPE itself).
//
// In one dimension two more methods are this one (tests/layers/test_group_actions.cpp shows each by a
// setting):
// - ComRoPE (Yu et al., CVPR 2025, arXiv 2506.03737; Longin-Yu/ComRoPE model.py) reduced to sequences: one
//   axis, so its angle matrices commute trivially, and R(p) = exp(p A) with A = F - F^T block-diagonal. With
//   2 x 2 blocks, exp(p A) rotates each adjacent pair by p (F_10 - F_01): variant = "comrope" learns that
//   signed angle per head and pair, initialized as theirs (F ~ N(0, init_std^2): N(0, 2 init_std^2)), pairs
//   interleaved; the PyTorch twin computes it with torch.matrix_exp as ComRoPE does.
// - Any one-parameter group exp(p A), A skew (larger ComRoPE blocks, learned commuting planes, GRAPE-M's
//   non-commuting mixtures): A = Q diag(theta_k J) Q^T, so the logits are this rotation by theta of Q^T q and
//   Q^T k, a change of basis W_q and W_k absorb (gen_fixtures.py check_grape). Those parametrizations are not
//   built: training them needs a matrix-exponential op (docs/encodings.md).
//
// Parameters per layer it runs in: pos.freq.<l> (1 or H, hs/2): log_freq_scale * log omega (variant grape, as
// the authors' log_freq: omega > 0; their default scale 16, grape_log_freq_scale) or omega itself (comrope:
// signed). Not decayed (ParamKind::bias). The scale is the authors' "lr-scaling trick": Adam's step on the
// stored value is about lr whatever its gradient's size, so on log omega it is lr / log_freq_scale.
#include <cmath>
#include <string>

#include "core/ops/elementwise.hpp"
#include "core/ops/unary.hpp"
#include "core/shape_only.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/learned_rotation.hpp"
#include "layers/positional/pairwise.hpp"  // SeenPositions
#include "layers/positional/rotary_encoding.hpp"  // rotary_layout_of

namespace pelab {
namespace {

struct GrapeMSettings {
  bool comrope = false, per_head = false, learn = true;
  double base = 10000.0, init_std = 1.0, log_freq_scale = 16.0;
  RotaryLayout layout = RotaryLayout::half;
};

GrapeMSettings grape_m_settings(const Params& p) {
  GrapeMSettings s;
  s.comrope = p.get_string("variant") == "comrope";
  s.per_head = p.get_bool("per_head");
  s.learn = p.get_bool("learn");
  s.base = p.get_number("base");
  s.init_std = p.get_number("init_std");
  s.log_freq_scale = p.get_number("log_freq_scale");
  s.layout = rotary_layout_of(p);
  return s;
}

class GrapeM : public PositionalEncoding {
 public:
  GrapeM(const ModelDims& d, GrapeMSettings s)
      : s_(s), Hf_(s.per_head && s.learn ? d.n_heads : 1), P_(d.head_dim / 2), rope_freq_(rotary_inv_freq(d.head_dim, s.base)) {
    for (std::size_t l = 0; l < d.n_layers; ++l) {
      freq_.push_back(s.learn && d.runs_in(l) ? add_parameter("freq." + std::to_string(l), {Hf_, P_},
                                                               ParamKind::bias, initializer())
                                              : Tensor());
    }
    tables_.resize(d.n_layers);
  }

  // The packed path (one rotary_qkv) when no gradient must reach omega and the heads share it.
  std::optional<RotaryQK> rotary_qk(const AttentionContext& ctx) override {
    if (Hf_ != 1 || (s_.learn && Tape::current().grad_enabled())) return std::nullopt;
    const auto tb = tables(ctx);
    return RotaryQK{tb, tb, s_.layout};
  }

  void encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) override {
    const auto tb = tables(ctx);
    if (!s_.learn) {
      q = rotary(q, tb, s_.layout);
      k = rotary(k, tb, s_.layout);
      return;
    }
    const Tensor& f = freq_.at(ctx.layer);
    const Tensor omega = s_.comrope ? f : exp(mul_scalar(f, real(1 / s_.log_freq_scale)));  // (Hf, P)
    q = learned_rotary(q, ctx.positions, omega, tb, s_.layout);
    k = learned_rotary(k, ctx.positions, omega, tb, s_.layout);
  }

 private:
  Initializer initializer() const {
    const GrapeMSettings s = s_;
    const std::vector<double> f = rope_freq_;
    return [s, f](Array& v, Rng& rng) {
      const std::size_t P = f.size();
      for (std::size_t i = 0; i < v.size(); ++i)
        v.data()[i] = static_cast<real>(s.comrope ? std::sqrt(2.0) * s.init_std * rng.normal()
                                                  : s.log_freq_scale * std::log(f[i % P]));
    };
  }

  // omega of this layer in double: RoPE's spectrum, exp(log omega) or omega (Hf * P, row-major), log omega
  // rounded as the taped mul_scalar rounds it. Shape-only (core/shape_only.hpp): the parameter has no values;
  // zeros, the same every call, so the tables are built when a real run builds them (once per layer and ids).
  std::vector<double> omega_values(std::size_t layer) const {
    if (!s_.learn) return rope_freq_;
    std::vector<double> w(Hf_ * P_);
    if (shape_only()) return w;
    const real* f = freq_.at(layer).data();
    const real inv = real(1 / s_.log_freq_scale);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = s_.comrope ? double(f[i]) : std::exp(double(f[i] * inv));
    return w;
  }

  // The layer's tables, rebuilt when the ids or its omega changed (every step in training: the tables
  // hold angles, and the optimizer moves omega).
  std::shared_ptr<const RotaryTables> tables(const AttentionContext& ctx) {
    if (!seen_.same(ctx.positions)) {
      for (auto& t : tables_) t = {};
      seen_.set(ctx.positions);
    }
    const std::size_t slot = s_.learn ? ctx.layer : 0;
    Cached& c = tables_.at(slot);
    std::vector<double> w = omega_values(ctx.layer);
    if (!c.tables || c.omega != w) {
      c.tables = learned_rotary_tables(ctx.positions, w, Hf_);
      c.omega = std::move(w);
    }
    return c.tables;
  }

  struct Cached {
    std::vector<double> omega;
    std::shared_ptr<const RotaryTables> tables;
  };
  GrapeMSettings s_;
  std::size_t Hf_, P_;
  std::vector<double> rope_freq_;  // base^(-2i/hs): the init (grape) and the fixed spectrum (learn = false)
  std::vector<Tensor> freq_;       // per layer (Hf, P); undefined where not learned or not run
  std::vector<Cached> tables_;     // per layer (one slot when not learned)
  SeenPositions seen_;
};

PELAB_REGISTER_ENCODING(grape_m, encoding_spec("grape_m",
    "GRAPE-M (commuting): q, k rotated by exp(p omega L) on canonical planes with learned omega = RoPE with "
    "trainable frequencies; variant comrope = 1-D ComRoPE (Zhang et al. 2025; Yu et al. 2025)")
    .relative()
    .params({
        choice_param("variant", "grape", {"grape", "comrope"},
                     "grape: omega = exp(learned log omega), RoPE's spectrum at init (the authors' code); comrope: "
                     "signed omega per pair, N(0, 2 init_std^2) at init (ComRoPE's F - F^T, 2x2 blocks)"),
        number_param("base", 10000.0, "grape: initial omega_i = base^(-2i/hs)").in(2.0, 1e9),
        number_param("log_freq_scale", 16.0, "grape: the parameter stores this times log omega (the authors' "
                                             "default 16: Adam moves log omega 16x slower than lr)")
            .in(0.01, 1000.0),
        number_param("init_std", 1.0, "comrope: the std of F at init (theirs: 1, on positions scaled to [0, 1])")
            .in(0.0, 100.0),
        choice_param("layout", "half", {"interleaved", "half"},
                     "the planes: pairs (i, i+hs/2) as the authors' code, or (2i, 2i+1) as ComRoPE's blocks"),
        bool_param("per_head", false, "one spectrum per head (ComRoPE), else shared by the heads (GRAPE's default)"),
        bool_param("learn", true, "false: omega fixed at RoPE's spectrum (exactly rope with this layout)"),
    })
    .validate([](const Params&, const ModelDims& d) {
      if (d.head_dim % 2 != 0)
        throw Error("encoding 'grape_m' rotates planes of 2 dims: head_dim " + std::to_string(d.head_dim) +
                    " must be even");
    })
    .make([](const Params& p, const ModelDims& d) { return std::make_unique<GrapeM>(d, grape_m_settings(p)); }));

}  // namespace
}  // namespace pelab
