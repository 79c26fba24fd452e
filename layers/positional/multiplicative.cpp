// Multiplicative positions (an "unconventional" absolute encoding in Su 2021, "The position encodings of
// Transformers that rack researchers' brains", kexue.fm/archives/8130, in Chinese): the token embedding
// times a position vector, x[b, t] * p[p_bt] elementwise, instead of x + p. `kind` picks p:
//   sinusoidal: the sin/cos table of sinusoidal.cpp (fixed). It has zeros and sign changes: at t = 0
//               every sin component is 0, so half of the first token's embedding is wiped out.
//   learned:    a trainable (max_len, d) table of per-position gains, starting at 1 (the model starts
//               as NoPE) and not weight-decayed (decay would pull the gains, and the input, to 0); ids
//               beyond the table are unsupported.
#include <algorithm>

#include "core/ops/elementwise.hpp"
#include "core/ops/embedding.hpp"
#include "layers/positional/auto_size.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/position_vectors.hpp"
#include "layers/positional/sinusoidal.hpp"

namespace pelab {
namespace {

class Multiplicative : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Multiplicative(bool learned, double base, std::size_t max_len, std::size_t d)
      : learned_(learned), base_(base), max_len_(max_len) {
    // ParamKind::norm_gain: initialized to 1 under every scheme, never decayed.
    if (learned_) gain_ = add_parameter("gain", {max_len, d}, ParamKind::norm_gain);
  }

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    const std::int32_t* p = positions.data();
    if (positions.size() && *std::min_element(p, p + positions.size()) < 0)
      throw Error("encoding 'multiplicative': negative position id in the batch");
    if (!learned_)
      return mul(x, cache_.get(positions, [&] { return sinusoidal_table(positions, x.size(2), base_); }));
    const std::int32_t top = positions.size() ? *std::max_element(p, p + positions.size()) : 0;
    if (auto why = unsupported(top)) throw Error(*why);
    return mul(x, embedding(gain_, positions));  // (B, T, C) * (B, T, C)
  }

  std::optional<std::string> unsupported(std::int64_t max_position) const override {
    if (!learned_ || max_position < static_cast<std::int64_t>(max_len_)) return std::nullopt;
    return "encoding 'multiplicative': position " + std::to_string(max_position) + " is beyond its learned table of " +
           std::to_string(max_len_) + " rows (max_len); set encoding.multiplicative.max_len for a longer one";
  }

 private:
  bool learned_;
  double base_;
  std::size_t max_len_;
  Tensor gain_;  // (max_len, C) when learned
  PositionVectorCache cache_;
};

PELAB_REGISTER_ENCODING(multiplicative, encoding_spec("multiplicative",
    "token embedding times a sinusoidal or learned position vector, elementwise")
    .params({
        choice_param("kind", "sinusoidal", {"sinusoidal", "learned"},
                     "the position vector: fixed sin/cos, or a trainable table of gains starting at 1"),
        number_param("base", 10000.0, "sinusoidal: frequencies are base^(-2i/d)").in(2.0, 1e9),
        integer_param("max_len", 0,
            "learned: table rows; 0 = the ids training uses: the longest training sequence, or [train] "
            "max_position under offset/randomized positions (config.toml records the value)").in(0.0, 1e6),
    })
    .validate([](const Params& p, const ModelDims& dims) {
      if (p.get_string("kind") == "sinusoidal" && dims.d_model % 2 != 0)
        throw Error("encoding 'multiplicative': kind sinusoidal needs an even d_model (sin/cos pairs), got " +
                    std::to_string(dims.d_model));
    })
    .make([](const Params& p, const ModelDims& dims) {
      const bool learned = p.get_string("kind") == "learned";
      std::size_t max_len = static_cast<std::size_t>(p.get_int("max_len"));
      if (max_len == 0) max_len = dims.max_position;
      if (learned && max_len == 0)
        throw Error("encoding 'multiplicative': max_len is 0 and the training position range is unknown");
      return std::make_unique<Multiplicative>(learned, p.get_number("base"), max_len, dims.d_model);
    })
    .input_level());
PELAB_REGISTER_AUTO_SIZE(multiplicative_max_len, "multiplicative", "max_len", [](const Params& p, const ModelDims& d) {
  const bool table = p.get_string("kind") == "learned" && d.max_position;
  return table ? std::optional<std::int64_t>(d.max_position) : std::nullopt;
});

}  // namespace
}  // namespace pelab
