// ALiBi (Press et al. 2022, "Train Short, Test Long"): no position vectors at all; each head h adds
// -m_h * (distance between query and key) to its attention logits, with geometric slopes
// m_h = 2^(-8(h+1)/H) (for H a power of two; the paper's interpolation otherwise). The bias depends
// only on relative distance, so it is defined for any length.
#include <cmath>

#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

// The paper's slopes: for H a power of two, 2^(-8/H), 2^(-16/H), ...; otherwise the slopes of the
// next lower power of two followed by every other slope of the next higher one.
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

class Alibi : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
  Alibi(std::size_t n_heads, double slope_scale) : slopes_(alibi_slopes(n_heads)) {
    for (auto& m : slopes_) m *= slope_scale;
  }

  // (1, H, T, T): bias[0, h, i, j] = -m_h |p_i - p_j|. One bias serves the whole batch, so every row of
  // the batch must carry the same positions (the usual 0..T-1 or a shared offset).
  Tensor attention_bias(const IndexArray& positions, std::size_t) override {
    const std::size_t B = positions.shape()[0], T = positions.shape()[1], H = slopes_.size();
    const std::int32_t* p = positions.data();
    for (std::size_t b = 1; b < B; ++b)
      for (std::size_t t = 0; t < T; ++t)
        if (p[b * T + t] != p[t])
          throw Error("encoding 'alibi': every sequence of a batch must use the same position ids");
    Array bias(Shape{1, H, T, T});
    real* out = bias.data();
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j)
          out[(h * T + i) * T + j] = static_cast<real>(-slopes_[h] * std::abs(double(p[i]) - double(p[j])));
    return Tensor(std::move(bias));  // a constant: nothing to learn
  }

 private:
  std::vector<double> slopes_;
};

PELAB_REGISTER_ENCODING(alibi, EncodingSpec{
    "alibi",
    "linear distance penalty on attention logits, one slope per head (Press et al. 2022)",
    {{"slope_scale", ValueType::number, 1.0, 0.0, 100.0, {}, "multiplies every head's slope"}},
    nullptr,
    [](const Params& p, const ModelDims& dims) {
      return std::make_unique<Alibi>(dims.n_heads, p.get_number("slope_scale"));
    },
});

}  // namespace
}  // namespace pelab
