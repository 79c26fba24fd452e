// ALiBi (Press et al. 2022, "Train Short, Test Long"): no position vectors at all; each head h adds
// -m_h * (distance between query and key) to its attention logits, with geometric slopes
// m_h = 2^(-8(h+1)/H) (for H a power of two; the paper's interpolation otherwise). The bias depends
// only on relative distance, so it is defined for any length.
#include <cmath>

#include "core/shape_only.hpp"
#include "layers/positional/alibi.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {

std::vector<double> alibi_slopes(std::size_t H) {
  auto pow2 = [](std::size_t n) {
    std::vector<double> s(n);
    for (std::size_t h = 0; h < n; ++h) s[h] = std::pow(2.0, -8.0 * double(h + 1) / double(n));
    return s;
  };
  std::size_t p = 1;
  while (p * 2 <= H) p *= 2;
  std::vector<double> s = pow2(p);
  if (p < H) {
    const std::vector<double> extra = pow2(2 * p);
    for (std::size_t i = 0; s.size() < H; i += 2) s.push_back(extra[i]);
  }
  return s;
}

namespace {

class Alibi : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
  Alibi(std::size_t n_heads, double slope_scale) : slopes_(alibi_slopes(n_heads)) {
    for (auto& m : slopes_) m *= slope_scale;
  }

  bool bias_by_query_rows() const override { return true; }

  // bias[b, h, i, j] = -m_h |p_i - p_j|: (1, H, T, T) when every row has the same ids, else (B, H, T, T).
  // A constant built once per forward (on the first layer's call) and shared by every layer (as T5,
  // Kerple and FIRE: pairwise.hpp); a query tile's rows are built per call and not kept.
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    if (ctx.tile.active()) return Tensor(bias_of(pairwise_difference(ctx.positions, ctx.shared_positions, ctx.tile)));
    if (!seen_.same(ctx.positions)) {  // new ids: a new bias
      bias_ = Tensor(bias_of(pairwise_difference(ctx.positions, ctx.shared_positions)));  // nothing to learn
      seen_.set(ctx.positions);
    }
    return bias_;
  }

 private:
  // d (rows, Tq, Tk) -> -m_h |d| (rows, H, Tq, Tk)
  Array bias_of(const Array& d) const {
    const std::size_t rows = d.shape()[0], n = d.shape()[1] * d.shape()[2], H = slopes_.size();
    Array bias(Shape{rows, H, d.shape()[1], d.shape()[2]});
    real* out = bias.data();
    for (std::size_t b = 0; b < (shape_only() ? 0 : rows); ++b)  // core/shape_only.hpp
      for (std::size_t h = 0; h < H; ++h) {
        const real* dist = d.data() + b * n;
        for (std::size_t k = 0; k < n; ++k) *out++ = static_cast<real>(-slopes_[h] * std::abs(double(dist[k])));
      }
    return bias;
  }

  std::vector<double> slopes_;
  Tensor bias_;
  SeenPositions seen_;
};

PELAB_REGISTER_ENCODING(alibi, encoding_spec("alibi",
    "linear distance penalty on attention logits, one slope per head (Press et al. 2022)")
    .relative()
    .params({number_param("slope_scale", 1.0, "multiplies every head's slope").in(0.0, 100.0)})
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Alibi>(dims.n_heads, p.get_number("slope_scale"));
    }));

}  // namespace
}  // namespace pelab
