// PoPE, polar coordinate position embeddings (Gopalakrishnan, Csordás, Schmidhuber and Mozer 2025,
// "Decoupling the What and Where With Polar Coordinate Positional Embeddings", arXiv 2509.10534): each of
// the hs components of q and k is a magnitude, softplus(q_c), and its phase comes from the position alone,
// p theta_c with theta_c = base^(-c / hs), one frequency per component (not per pair as RoPE), so
//   logit_ij = sum_c softplus(q_ic) softplus(k_jc) cos((p_i - p_j) theta_c - delta_hc) / sqrt(hs):
// what (the magnitudes) and where (the phases) never mix. q and k become [mu cos(phase), mu sin(phase)],
// twice as wide as v (the attention takes that; its scale stays 1/sqrt(hs), as x-transformers'
// PolarEmbedding). No official code was found: this follows x-transformers (apply_polar_pos_emb) and
// lucidrains' PoPE-pytorch (PoPE_pytorch/pope.py, apply_pope_to_qk). delta is their optional learned
// phase bias on the keys' phases, one per head and frequency, clamped to [-2 pi, 0] in every forward;
// phase_bias = "none" (the default) leaves it out (delta = 0), "zeros" starts it at 0 (their default),
// "uniform" draws it from U(-2 pi, 0) (their bias_uniform_init). Here each layer has its own delta
// (pos.phase_bias, (n_layers, H, hs); under a layout one row per layer that runs pope); PoPE-pytorch
// leaves the sharing to the caller. A function of id differences only: relative.
#include <cmath>

#include "core/shape_only.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

class Pope : public PositionalEncoding {
 public:
  Pope(double base, const ModelDims& d, const std::string& phase_bias) : base_(base), hs_(d.head_dim) {
    if (phase_bias == "none" || d.layers_run() == 0) return;
    const bool uniform = phase_bias == "uniform";
    for (std::size_t l = 0, row = 0; l < d.n_layers; ++l) row_.push_back(d.runs_in(l) ? row++ : kNoRow);
    delta_ = add_parameter("phase_bias", {d.layers_run(), d.n_heads, d.head_dim}, ParamKind::bias,
                           [uniform](Array& v, Rng& rng) {
                             for (auto& x : v) x = uniform ? real(-2 * M_PI * rng.uniform()) : real(0);
                           });
  }

  // cos and sin of p theta_c: (rows, 1, T, hs), rows = 1 when every row has the same ids
  void begin_forward(const IndexArray& positions) override {
    if (seen_.same(positions)) return;
    const bool shared = rows_share_positions(positions);
    const std::size_t T = positions.shape()[1], rows = shared ? 1 : positions.shape()[0];
    Array c(Shape{rows, 1, T, hs_}), s(Shape{rows, 1, T, hs_});
    for (std::size_t r = 0, n = shape_only() ? 0 : rows; r < n; ++r)  // core/shape_only.hpp
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t d = 0; d < hs_; ++d) {
          const double angle = double(positions(r, t)) * std::pow(base_, -double(d) / double(hs_));
          c(r, 0, t, d) = static_cast<real>(std::cos(angle));
          s(r, 0, t, d) = static_cast<real>(std::sin(angle));
        }
    cos_ = Tensor(std::move(c));
    sin_ = Tensor(std::move(s));
    seen_.set(positions);
  }

  // q, k (B, H, T, hs) -> (B, H, T, 2 hs)
  void encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) override {
    if (!seen_.same(ctx.positions)) begin_forward(ctx.positions);
    auto polar = [&](const Tensor& x, const Tensor& c, const Tensor& s) {
      const Tensor mu = softplus(x);
      return concat({mul(mu, c), mul(mu, s)}, 3);
    };
    q = polar(q, cos_, sin_);
    if (!delta_.defined()) {
      k = polar(k, cos_, sin_);
      return;
    }
    // The keys' phase p theta_c + delta_hc: cos and sin by the angle-sum identities, (rows, H, T, hs).
    const std::size_t H = delta_.size(1);
    const std::size_t row = row_.at(ctx.layer);
    if (row == kNoRow)
      throw Error("pope: layer " + std::to_string(ctx.layer) + " is not one of the layout's pope layers");
    const Tensor d = clamp(reshape(slice(delta_, 0, row, row + 1), {1, H, 1, hs_}), real(-2 * M_PI), 0);
    const Tensor cd = cos(d), sd = sin(d);  // (1, H, 1, hs)
    k = polar(k, sub(mul(cos_, cd), mul(sin_, sd)), add(mul(sin_, cd), mul(cos_, sd)));
  }

 private:
  double base_;
  std::size_t hs_;
  SeenPositions seen_;
  Tensor cos_, sin_;
  static constexpr std::size_t kNoRow = std::size_t(-1);
  Tensor delta_;               // (layers it runs in, H, hs) or undefined (phase_bias = "none")
  std::vector<std::size_t> row_;  // per layer its row of delta_, kNoRow where the layout runs another encoding
};

PELAB_REGISTER_ENCODING(pope, encoding_spec("pope",
    "polar positions: softplus magnitudes of q, k with phases from the position alone, one frequency per component (Gopalakrishnan et al. 2025)")
    .relative()
    .params({
        number_param("base", 10000.0, "theta_c = base^(-c/hs), c = 0..hs-1").in(2.0, 1e9),
        choice_param("phase_bias", "none", {"none", "zeros", "uniform"},
                     "a learned phase delta per layer, head and frequency added to the keys' phases, clamped to "
                     "[-2 pi, 0]: none = no delta; zeros = starting at 0; uniform = starting from U(-2 pi, 0)"),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Pope>(p.get_number("base"), dims, p.get_string("phase_bias"));
    }));

}  // namespace
}  // namespace pelab
