// Sinusoidal absolute encoding (Vaswani et al. 2017), interleaved as in the paper:
//   PE[t, 2i] = sin(t / base^(2i/d)),  PE[t, 2i+1] = cos(t / base^(2i/d)),
// added to the token embeddings. Defined for any position; nothing is learned.
#include <cmath>

#include "core/ops/elementwise.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/sinusoidal.hpp"

namespace pelab {

Array sinusoidal_table(const IndexArray& positions, std::size_t d, double base) {
  const std::size_t n = positions.size();
  Shape shape(positions.shape().begin(), positions.shape().end());
  shape.push_back(d);
  Array pe(shape);
  real* out = pe.data();
  for (std::size_t r = 0; r < n; ++r) {
    const double t = positions.data()[r];
    for (std::size_t j = 0; j < d; ++j) {
      const double freq = std::pow(base, -double(j - j % 2) / double(d));  // 2i = j rounded down to even
      out[r * d + j] = static_cast<real>(j % 2 == 0 ? std::sin(t * freq) : std::cos(t * freq));
    }
  }
  return pe;
}

namespace {

class Sinusoidal : public PositionalEncoding {
 public:
  Sinusoidal(double base, std::size_t d) : base_(base), d_(d) {}
  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    return add(x, Tensor(sinusoidal_table(positions, d_, base_)));  // (B, T, C) + (B, T, C)
  }

 private:
  double base_;
  std::size_t d_;
};

PELAB_REGISTER_ENCODING(sinusoidal, EncodingSpec{
    "sinusoidal",
    "fixed sin/cos absolute encoding added to the embeddings (Vaswani et al. 2017)",
    {{"base", ValueType::number, 10000.0, 2.0, 1e9, {}, "wavelength base: frequencies are base^(-2i/d)"}},
    [](const Params&, const ModelDims& dims) {
      if (dims.d_model % 2 != 0)
        throw Error("encoding 'sinusoidal' needs an even d_model (sin/cos pairs), got " + std::to_string(dims.d_model));
    },
    [](const Params& p, const ModelDims& dims) {
      return std::make_unique<Sinusoidal>(p.get_number("base"), dims.d_model);
    },
});

}  // namespace
}  // namespace pelab
