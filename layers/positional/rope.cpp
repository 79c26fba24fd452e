// Rotary position embedding (Su et al., RoFormer): q and k of every head are rotated pairwise by
// angles pos * theta_i, theta_i = base^(-2i/rot), so <R_m q, R_n k> depends only on n - m.
// `layout` picks the pairing: interleaved (2i, 2i+1) as in the paper, or half (i, i + rot/2) as in
// Llama; `fraction` of each head's dims is rotated (the rest pass through, as in GPT-NeoX).
#include <algorithm>
#include <cmath>

#include "core/ops/rotary.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

std::size_t rotated_dims(const Params& p, const ModelDims& dims) {
  const double r = p.get_number("fraction") * double(dims.head_dim);
  const auto rot = static_cast<std::size_t>(std::llround(r));
  if (std::abs(r - double(rot)) > 1e-9 || rot % 2 != 0 || rot == 0)
    throw Error("encoding 'rope': fraction " + format_value(Value(p.get_number("fraction"))) + " of head_dim " +
                std::to_string(dims.head_dim) + " gives " + format_value(Value(r)) +
                " rotated dims; it must be a positive even integer");
  return rot;
}

class Rope : public PositionalEncoding {
 public:
  Rope(std::size_t rot, double base, RotaryLayout layout) : rot_(rot), base_(base), layout_(layout) {}

  // Tables are built once per forward and shared by every layer; rebuilt if other positions come in.
  void begin_forward(const IndexArray& positions) override {
    tables_ = std::make_shared<RotaryTables>(rotary_tables(positions, rot_, base_));
    positions_ = positions;
  }
  void encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) override {
    const IndexArray& positions = ctx.positions;
    if (!tables_ || positions.shape() != positions_.shape() ||
        !std::equal(positions.begin(), positions.end(), positions_.begin()))
      begin_forward(positions);
    q = rotary(q, tables_, layout_);
    k = rotary(k, tables_, layout_);
  }

 private:
  std::size_t rot_;
  double base_;
  RotaryLayout layout_;
  std::shared_ptr<const RotaryTables> tables_;
  IndexArray positions_;
};

PELAB_REGISTER_ENCODING(rope, EncodingSpec{
    "rope",
    "rotary q/k embedding: attention depends on relative offsets (Su et al. 2021)",
    true,  // relative
    {
        {"base", ValueType::number, 10000.0, 2.0, 1e9, {}, "theta_i = base^(-2i/rot)"},
        {"layout", ValueType::string, std::string("interleaved"), {}, {}, {"interleaved", "half"},
         "pairs (2i, 2i+1) as in RoFormer, or (i, i+rot/2) as in Llama"},
        {"fraction", ValueType::number, 1.0, 0.0, 1.0, {}, "fraction of each head's dims rotated"},
    },
    [](const Params& p, const ModelDims& dims) { rotated_dims(p, dims); },
    [](const Params& p, const ModelDims& dims) {
      return std::make_unique<Rope>(rotated_dims(p, dims), p.get_number("base"),
                                    p.get_string("layout") == "half" ? RotaryLayout::half : RotaryLayout::interleaved);
    },
});

}  // namespace
}  // namespace pelab
