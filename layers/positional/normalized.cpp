// Positions normalized by the length: t / (T - 1), bounded in [0, 1] (0 the first token, 1 the last, as
// in Kazemnejad 2019, cited in integer.cpp), but the step between neighbours is 1 / (T - 1), so the same
// offset means different things at different lengths, which is the point.
//   v[b, t] = (p[b, t] - min_b) / (max_b - min_b),   x[b, t, k] += v[b, t] * u_k  (u as in integer.cpp)
// with min_b, max_b the smallest and largest id of row b (0 when they are equal). For the usual ids
// 0..T-1 this is t / (T - 1). What "the length" is here: the row as the model is fed it, padding
// included (the encoding sees ids, not the loss mask), so in a padded batch a short example takes the
// step of the longest; with offset/randomized ids, the row's span of ids.
// Consequences, each tested: it depends on ids only through differences, so a shift of every id
// changes nothing (declared relative, though it is not a function of p_i - p_j alone); and every
// position's vector depends on the row's LAST id, so appending tokens changes the outputs at earlier
// positions (causal in tokens, not in length: a generated sequence re-encodes its prefix every step).
#include <algorithm>

#include "core/ops/elementwise.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/position_vectors.hpp"

namespace pelab {
namespace {

class Normalized : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  explicit Normalized(ScalarPattern pattern) : pattern_(pattern) {}

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    const std::size_t B = x.size(0), T = x.size(1), C = x.size(2);
    const Tensor& pe = cache_.get(positions, [&] {
      std::vector<double> v(B * T);
      for (std::size_t b = 0; b < B; ++b) {
        const std::int32_t* p = positions.data() + b * T;
        const auto [lo, hi] = std::minmax_element(p, p + T);
        const double span = double(*hi) - double(*lo);
        for (std::size_t t = 0; t < T; ++t) v[b * T + t] = span > 0 ? (double(p[t]) - double(*lo)) / span : 0.0;
      }
      return scalar_position_vectors(v, B, T, C, pattern_);
    });
    return add(x, pe);  // (B, T, C) + (B, T, C)
  }

 private:
  ScalarPattern pattern_;
  PositionVectorCache cache_;
};

PELAB_REGISTER_ENCODING(normalized, encoding_spec("normalized",
    "(id - min) / (max - min) of the row's ids added to the embeddings (t / (T - 1) for ids 0..T-1)")
    .relative()  // a shift of every id cancels in (p - min) / (max - min)
    .params({scalar_pattern_param()})
    .make([](const Params& p, const ModelDims&) { return std::make_unique<Normalized>(scalar_pattern(p)); })
    .input_level());

}  // namespace
}  // namespace pelab
