// Rotary position embedding (Su et al., RoFormer): q and k of every head are rotated pairwise by
// angles pos * theta_i, theta_i = base^(-2i/rot), so <R_m q, R_n k> depends only on n - m.
// `layout` picks the pairing: interleaved (2i, 2i+1) as in the paper, or half (i, i + rot/2) as in
// Llama; `fraction` of each head's dims is rotated (the rest pass through, as in GPT-NeoX).
// `scaling` stretches a trained model past its length (pi, ntk, dynamic_ntk, yarn: rope_scaling.hpp);
// meant for evaluation (`pelab eval RUN --set encoding.rope.scaling=yarn`), allowed in training too.
#include <algorithm>
#include <cmath>

#include "core/shape_only.hpp"
#include "core/ops/rotary.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/rope_scaling.hpp"
#include "layers/positional/rotary_encoding.hpp"

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

RopeScaling scaling_of(const Params& p, const ModelDims& dims) {
  RopeScaling sc;
  sc.method = p.get_string("scaling");
  sc.factor = p.get_number("factor");
  sc.alpha = p.get_number("yarn_alpha");
  sc.beta = p.get_number("yarn_beta");
  sc.mscale_coeff = p.get_number("yarn_mscale");
  const auto L = p.get_int("original_len");
  sc.original_len = L > 0 ? static_cast<std::size_t>(L) : dims.max_position;
  return sc;
}

void check_scaling(const Params& p, const ModelDims& dims) {
  const RopeScaling sc = scaling_of(p, dims);
  const std::size_t rot = rotated_dims(p, dims);
  if ((sc.method == "ntk" || sc.method == "dynamic_ntk") && rot < 4)
    throw Error("encoding 'rope': scaling = \"" + sc.method + "\" changes the base by s^(d/(d-2)) and needs at least 4 "
                "rotated dims per head; this model rotates " + std::to_string(rot));
  if (sc.method == "yarn" && !(sc.alpha < sc.beta))
    throw Error("encoding 'rope': yarn_alpha " + format_value(Value(sc.alpha)) + " must be smaller than yarn_beta " +
                format_value(Value(sc.beta)));
  if (sc.method != "none" && sc.original_len == 0)
    throw Error("encoding 'rope': scaling needs original_len (the trained context), and the model has no training length");
}

// Row b's largest id + 1: dynamic NTK's current length n (Hugging Face: max(position_ids) + 1), per row so
// that a row's result does not depend on the other rows of its batch.
std::size_t row_length(const IndexArray& positions, std::size_t b) {
  const std::size_t T = positions.shape()[1];
  const std::int32_t* p = positions.data() + b * T;
  const std::int32_t mx = T ? *std::max_element(p, p + T) : -1;
  return static_cast<std::size_t>(std::max<std::int32_t>(mx + 1, 0));
}

// Tables with dynamic NTK's frequencies, built per row (rows with the same length share one build).
RotaryTables dynamic_tables(const IndexArray& positions, std::size_t rot, double base, const RopeScaling& sc) {
  const std::size_t B = positions.shape()[0], T = positions.shape()[1], P = rot / 2;
  RotaryTables tb;
  tb.cos.resize({B, T, P});
  tb.sin.resize({B, T, P});
  for (std::size_t b = 0; b < B; ++b) {
    IndexArray row(Shape{1, T});
    std::copy(positions.data() + b * T, positions.data() + (b + 1) * T, row.data());
    const RotaryTables r = rotary_tables(row, scaled_rope_inv_freq(rot, base, sc, row_length(positions, b)));
    if (shape_only()) continue;  // core/shape_only.hpp: no values
    std::copy(r.cos.begin(), r.cos.end(), tb.cos.data() + b * T * P);
    std::copy(r.sin.begin(), r.sin.end(), tb.sin.data() + b * T * P);
  }
  return tb;
}

// Tables are built once per forward and shared by every layer (rotary_encoding.hpp).
class Rope : public RotaryEncoding {
 public:
  Rope(std::size_t rot, double base, RotaryLayout layout, RopeScaling sc)
      : RotaryEncoding(layout), rot_(rot), base_(base), sc_(std::move(sc)) {}

 private:
  QKTables build_tables(const IndexArray& positions) const override {
    if (sc_.method == "none") {
      auto tb = std::make_shared<const RotaryTables>(rotary_tables(positions, rot_, base_));
      return {tb, tb};
    }
    auto tb = std::make_shared<RotaryTables>(
        sc_.method == "dynamic_ntk" ? dynamic_tables(positions, rot_, base_, sc_)
                                    : rotary_tables(positions, scaled_rope_inv_freq(rot_, base_, sc_, 0)));
    if (const double m = rope_table_scale(sc_); m != 1.0)
      scale_rotary_tables(*tb, positions, [m](std::int32_t, std::size_t) { return m; });
    return {tb, tb};
  }

  std::size_t rot_;
  double base_;
  RopeScaling sc_;
};

PELAB_REGISTER_ENCODING(rope, encoding_spec("rope",
    "rotary q/k embedding: attention depends on relative offsets (Su et al. 2021)")
    .relative()
    .params({
        number_param("base", 10000.0, "theta_i = base^(-2i/rot)").in(2.0, 1e9),
        choice_param("layout", "interleaved", {"interleaved", "half"},
                     "pairs (2i, 2i+1) as in RoFormer, or (i, i+rot/2) as in Llama"),
        number_param("fraction", 1.0, "fraction of each head's dims rotated").in(0.0, 1.0),
        choice_param("scaling", "none", {"none", "pi", "ntk", "dynamic_ntk", "yarn"},
                     "length extension (mainly for `pelab eval --set`): pi = positions p/factor (Chen et al. 2023); "
                     "ntk = base*factor^(d/(d-2)); dynamic_ntk = ntk with factor*n/L-(factor-1) for n > L "
                     "(n: the row's largest id + 1; not shift-invariant); yarn = per-frequency ramp between pi and "
                     "none, the rotated dims' logits *(yarn_mscale ln(factor)+1)^2 (Peng et al. 2023)"),
        number_param("factor", 2.0, "scale s of pi, ntk, yarn (the target length / L); "
            "dynamic_ntk's multiplier").in(1.0, 1e6),
        integer_param("original_len", 0,
            "L, the trained context the scaling starts from; 0 = the training position range").in(0.0, 1e9),
        number_param("yarn_alpha", 1.0,
            "yarn: frequencies with fewer than alpha rotations in L are fully interpolated").in(0.0, 1e6),
        number_param("yarn_beta", 32.0, "yarn: frequencies with more than beta rotations in L are kept").in(0.0, 1e6),
        number_param("yarn_mscale", 0.1,
            "yarn: q and k times yarn_mscale*ln(factor)+1 (the paper's sqrt(1/t)); 0 = no temperature").in(0.0, 10.0),
    })
    .validate([](const Params& p, const ModelDims& dims) { check_scaling(p, dims); })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Rope>(rotated_dims(p, dims), p.get_number("base"), rotary_layout_of(p),
                                    scaling_of(p, dims));
    }));

}  // namespace
}  // namespace pelab
