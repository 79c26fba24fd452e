// Concatenated positions (one of the ways to combine x and p besides the sum that Su 2021 lists; see
// multiplicative.cpp): instead of adding a position vector to the token embedding, give each its own
// components. The model width stays d_model, so the blocks are unchanged:
// the token table is (V, d_model - d_pos) (token_width below) and a d_pos-wide position vector fills
// the last d_pos components,
//   x[b, t] = [ tok_emb[token] (d_model - d_pos) | pe(p[b, t]) (d_pos) ]
// so position and content never interfere in the input (they still mix in the first attention layer).
// `kind` picks pe: sinusoidal (the sin/cos table of sinusoidal.cpp at width d_pos, fixed) or learned
// (a (max_len, d_pos) table, ids beyond it unsupported). The LM head cannot share a narrower token
// table: model.tie_embeddings is refused.
#include <algorithm>

#include "core/ops/embedding.hpp"
#include "core/ops/shape.hpp"
#include "layers/positional/auto_size.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/position_vectors.hpp"
#include "layers/positional/sinusoidal.hpp"

namespace pelab {
namespace {

std::size_t pos_width(const Params& p, const ModelDims& dims) {
  const std::int64_t given = p.get_int("d_pos");
  const std::size_t d_pos = given > 0 ? static_cast<std::size_t>(given) : std::max<std::size_t>(2, dims.d_model / 8 * 2);
  if (d_pos >= dims.d_model)
    throw Error("encoding 'concat': d_pos " + std::to_string(d_pos) + " leaves no token components of d_model " +
                std::to_string(dims.d_model) + "; expected d_pos < d_model");
  if (p.get_string("kind") == "sinusoidal" && d_pos % 2 != 0)
    throw Error("encoding 'concat': kind sinusoidal needs an even d_pos (sin/cos pairs), got " + std::to_string(d_pos));
  if (dims.tie_embeddings)
    throw Error("encoding 'concat': model.tie_embeddings = true would make the LM head reuse the token table, "
                "which concat narrows to " + std::to_string(dims.d_model - d_pos) + " of the " +
                std::to_string(dims.d_model) + " components; set model.tie_embeddings = false");
  return d_pos;
}

class Concat : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Concat(bool learned, double base, std::size_t max_len, std::size_t d_pos)
      : learned_(learned), base_(base), max_len_(max_len), d_pos_(d_pos) {
    if (learned_) weight_ = add_parameter("weight", {max_len, d_pos}, ParamKind::embedding);
  }

  std::size_t token_width(std::size_t d_model) const override { return d_model - d_pos_; }

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    const std::int32_t* p = positions.data();
    if (positions.size() && *std::min_element(p, p + positions.size()) < 0)
      throw Error("encoding 'concat': negative position id in the batch");
    if (!learned_)
      return concat({x, cache_.get(positions, [&] { return sinusoidal_table(positions, d_pos_, base_); })}, 2);
    const std::int32_t top = positions.size() ? *std::max_element(p, p + positions.size()) : 0;
    if (auto why = unsupported(top)) throw Error(*why);
    return concat({x, embedding(weight_, positions)}, 2);  // (B, T, C - d_pos) | (B, T, d_pos)
  }

  std::optional<std::string> unsupported(std::int64_t max_position) const override {
    if (!learned_ || max_position < static_cast<std::int64_t>(max_len_)) return std::nullopt;
    return "encoding 'concat': position " + std::to_string(max_position) + " is beyond its learned table of " +
           std::to_string(max_len_) + " rows (max_len); set encoding.concat.max_len for a longer one";
  }

 private:
  bool learned_;
  double base_;
  std::size_t max_len_, d_pos_;
  Tensor weight_;  // (max_len, d_pos) when learned
  PositionVectorCache cache_;
};

PELAB_REGISTER_ENCODING(concat, encoding_spec("concat",
    "token embedding (d - d_pos wide) concatenated with a sinusoidal or learned position vector")
    .params({
        choice_param("kind", "sinusoidal", {"sinusoidal", "learned"},
                     "the position vector: fixed sin/cos of width d_pos, or a trainable (max_len, d_pos) table"),
        integer_param("d_pos", 0,
            "components given to the position; 0 = d_model / 4 rounded down to even; "
            "the token table is d_model - d_pos wide (config.toml records the value)").in(0.0, 1e6),
        number_param("base", 10000.0, "sinusoidal: frequencies are base^(-2i/d_pos)").in(2.0, 1e9),
        integer_param("max_len", 0,
            "learned: table rows; 0 = the ids training uses: the longest training sequence, or [train] "
            "max_position under offset/randomized positions (config.toml records the value)").in(0.0, 1e6),
    })
    .validate([](const Params& p, const ModelDims& dims) { pos_width(p, dims); })
    .make([](const Params& p, const ModelDims& dims) {
      const bool learned = p.get_string("kind") == "learned";
      std::size_t max_len = static_cast<std::size_t>(p.get_int("max_len"));
      if (max_len == 0) max_len = dims.max_position;
      if (learned && max_len == 0) throw Error("encoding 'concat': max_len is 0 and the training position range is unknown");
      return std::make_unique<Concat>(learned, p.get_number("base"), max_len, pos_width(p, dims));
    })
    .input_level());
PELAB_REGISTER_AUTO_SIZE(concat_d_pos, "concat", "d_pos", [](const Params& p, const ModelDims& d) {
  return std::optional<std::int64_t>(pos_width(p, d));
});
PELAB_REGISTER_AUTO_SIZE(concat_max_len, "concat", "max_len", [](const Params& p, const ModelDims& d) {
  const bool table = p.get_string("kind") == "learned" && d.max_position;
  return table ? std::optional<std::int64_t>(d.max_position) : std::nullopt;
});

}  // namespace
}  // namespace pelab
