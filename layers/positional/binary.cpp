// Binary positions (Fleetwood 2024 and Kazemnejad 2019, cited in integer.cpp, on the way to sinusoidal
// encoding): the bits of the id, least significant first, as +-1 in the first `bits` components of the
// embedding (0 is -1, 1 is +1: zero-centred like sinusoidal's values; those write-ups use 0/1), the other
// components untouched. Bounded and distinct for every id below 2^bits, but discrete: neighbours can
// differ in every bit (7 -> 8), and ids >= 2^bits cannot be written at all (unsupported). The default
// width is just enough for the ids training uses (ModelDims::max_position: the longest training sequence
// for contiguous ids), so longer evaluations are n/a: more bits make them possible, with high bits that
// training never switched on.
#include <cmath>

#include "core/shape_only.hpp"
#include "core/ops/elementwise.hpp"
#include "layers/positional/auto_size.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/position_vectors.hpp"

namespace pelab {
namespace {

// Bits to write every id below max_position (at least 1).
std::size_t auto_bits(std::size_t max_position) {
  std::size_t bits = 1;
  while (bits < 31 && (std::size_t(1) << bits) < max_position) ++bits;
  return bits;
}

std::size_t bits_of(const Params& p, const ModelDims& dims) {
  const std::int64_t given = p.get_int("bits");
  const std::size_t bits = given > 0 ? static_cast<std::size_t>(given) : auto_bits(dims.max_position);
  if (bits > dims.d_model)
    throw Error("encoding 'binary': bits " + std::to_string(bits) + " exceed d_model " + std::to_string(dims.d_model) +
                " (one component per bit)");
  return bits;
}

class Binary : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  explicit Binary(std::size_t bits) : bits_(bits) {}

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    const std::size_t C = x.size(2);
    const Tensor& pe = cache_.get(positions, [&] {
      Array out(Shape{x.size(0), x.size(1), C});
      if (shape_only()) return out;  // core/shape_only.hpp: no values
      out.fill(real(0));
      real* po = out.data();
      for (std::size_t r = 0; r < positions.size(); ++r) {
        const std::int32_t p = positions.data()[r];
        if (p < 0) throw Error("encoding 'binary': negative position id " + std::to_string(p));
        if (auto why = unsupported(p)) throw Error(*why);
        for (std::size_t k = 0; k < bits_; ++k) po[r * C + k] = ((p >> k) & 1) ? real(1) : real(-1);
      }
      return out;
    });
    return add(x, pe);  // (B, T, C) + (B, T, C)
  }

  std::optional<std::string> unsupported(std::int64_t max_position) const override {
    if (max_position < (std::int64_t(1) << bits_)) return std::nullopt;
    return "encoding 'binary': position " + std::to_string(max_position) + " does not fit in " + std::to_string(bits_) +
           " bits (ids up to " + std::to_string((std::int64_t(1) << bits_) - 1) +
           "); set encoding.binary.bits to write longer ones";
  }

 private:
  std::size_t bits_;
  PositionVectorCache cache_;
};

PELAB_REGISTER_ENCODING(binary, encoding_spec("binary",
    "the bits of the position id as +-1 in the first components: bounded, discrete")
    .params({integer_param("bits", 0,
        "components holding bits; 0 = just enough for the ids training uses: the longest training sequence, "
        "or [train] max_position under offset/randomized positions (config.toml records the value); "
        "ids >= 2^bits are unsupported").in(0.0, 30.0)})
    .validate([](const Params& p, const ModelDims& dims) { bits_of(p, dims); })
    .make([](const Params& p, const ModelDims& dims) { return std::make_unique<Binary>(bits_of(p, dims)); })
    .input_level());
PELAB_REGISTER_AUTO_SIZE(binary_bits, "binary", "bits", [](const Params&, const ModelDims& d) {
  return std::optional<std::int64_t>(auto_bits(d.max_position));
});

}  // namespace
}  // namespace pelab
