// Sinusoidal absolute encoding (Vaswani et al. 2017), interleaved as in the paper:
//   PE[t, 2i] = sin(t / base^(2i/d)),  PE[t, 2i+1] = cos(t / base^(2i/d)),
// added to the token embeddings. Defined for any position; nothing is learned. The vectors have
// amplitude 1: token embeddings initialized at GPT-2's std 0.02 are drowned by them (the model then
// barely learns), so the shipped configs use model.emb_init_std = 0.2.
#include <cmath>

#include <algorithm>
#include <vector>

#include "core/shape_only.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/embedding.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/sinusoidal.hpp"

namespace pelab {

Array sinusoidal_table(const IndexArray& positions, std::size_t d, double base) {
  const std::size_t n = positions.size();
  Shape shape(positions.shape().begin(), positions.shape().end());
  shape.push_back(d);
  Array pe(shape);
  std::vector<double> freq(d / 2);
  for (std::size_t i = 0; i < d / 2; ++i) freq[i] = std::pow(base, -double(2 * i) / double(d));
  real* out = pe.data();
  for (std::size_t r = 0, m = shape_only() ? 0 : n; r < m; ++r) {  // core/shape_only.hpp
    const double t = positions.data()[r];  // angles in double: far positions stay accurate
    for (std::size_t i = 0; i < d / 2; ++i) {
      out[r * d + 2 * i] = static_cast<real>(std::sin(t * freq[i]));
      out[r * d + 2 * i + 1] = static_cast<real>(std::cos(t * freq[i]));
    }
  }
  return pe;
}

namespace {

class Sinusoidal : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
  Sinusoidal(double base, std::size_t d) : base_(base), d_(d) {}

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    const std::int32_t* p = positions.data();
    std::int32_t top = -1;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      if (p[i] < 0) throw Error("encoding 'sinusoidal': negative position id " + std::to_string(p[i]));
      top = std::max(top, p[i]);
    }
    // One row per position id, computed once and grown on demand; gathering rows is a copy.
    if (static_cast<std::size_t>(top) + 1 > rows_) {
      rows_ = std::max<std::size_t>(2 * rows_, static_cast<std::size_t>(top) + 1);
      IndexArray ids(Shape{rows_});
      for (std::size_t i = 0; i < rows_; ++i) ids(i) = static_cast<std::int32_t>(i);
      table_ = Tensor(sinusoidal_table(ids, d_, base_));  // (rows, C), constant
    }
    return add(x, embedding(table_, positions));  // (B, T, C) + (B, T, C)
  }

 private:
  double base_;
  std::size_t d_;
  std::size_t rows_ = 0;
  Tensor table_;
};

PELAB_REGISTER_ENCODING(sinusoidal, encoding_spec("sinusoidal",
    "fixed sin/cos absolute encoding added to the embeddings (Vaswani et al. 2017)")
    .params({number_param("base", 10000.0, "wavelength base: frequencies are base^(-2i/d)").in(2.0, 1e9)})
    .validate([](const Params&, const ModelDims& dims) {
      if (dims.d_model % 2 != 0)
        throw Error("encoding 'sinusoidal' needs an even d_model (sin/cos pairs), got " + std::to_string(dims.d_model));
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Sinusoidal>(p.get_number("base"), dims.d_model);
    })
    .input_level());

}  // namespace
}  // namespace pelab
