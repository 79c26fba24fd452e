// Integer positions: the position id t itself, times a step (`scale`), added to the token embedding,
// one of the first ideas of the usual walk towards sinusoidal encoding (Kazemnejad 2019, "Transformer
// Architecture: The Positional Encoding", kazemnejad.com/blog/transformer_architecture_positional_encoding;
// Fleetwood 2024, "You could have designed state of the art positional encoding",
// huggingface.co/blog/designing-positional-encoding). Unbounded by construction, which is the point: at
// t = 100 the position part is 100 times larger than at t = 1, so the token part of the input shrinks
// relative to it as sequences grow, and ids past training are values the model never saw.
//   x[b, t, k] += scale * p[b, t] * u_k,  u = (+1, -1, +1, ...) (pattern "alternating", the default)
// Fleetwood adds t to every component (pattern "constant"); a pre-LN model's LayerNorm subtracts the
// mean of each vector and so removes exactly that (position_vectors.hpp): kept to show it.
#include "core/ops/elementwise.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/position_vectors.hpp"

namespace pelab {
namespace {

class Integer : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Integer(double scale, ScalarPattern pattern) : scale_(scale), pattern_(pattern) {}

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    const std::size_t B = x.size(0), T = x.size(1), C = x.size(2);
    const Tensor& pe = cache_.get(positions, [&] {
      std::vector<double> v(positions.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale_ * double(positions.data()[i]);
      return scalar_position_vectors(v, B, T, C, pattern_);
    });
    return add(x, pe);  // (B, T, C) + (B, T, C)
  }

 private:
  double scale_;
  ScalarPattern pattern_;
  PositionVectorCache cache_;
};

PELAB_REGISTER_ENCODING(integer, encoding_spec("integer",
    "the position id itself (times a step) added to the embeddings: unbounded")
    .params({
        number_param("scale", 1.0, "the step: position t adds scale * t").in(1e-9, 1e9),
        scalar_pattern_param(),
    })
    .make([](const Params& p, const ModelDims&) {
      return std::make_unique<Integer>(p.get_number("scale"), scalar_pattern(p));
    })
    .input_level());

}  // namespace
}  // namespace pelab
