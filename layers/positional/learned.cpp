// Learned absolute positions (GPT-2 style): a trainable (max_len, d) table whose row t is added to
// the embedding at position t. It has nothing to say about positions it never trained: asking for
// t >= max_len is an error unless `clamp` opts into reusing the last row (an extrapolation baseline).
#include <algorithm>

#include "core/ops/elementwise.hpp"
#include "core/ops/embedding.hpp"
#include "layers/positional/auto_size.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

class Learned : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
  Learned(std::size_t max_len, std::size_t d, bool clamp) : max_len_(max_len), clamp_(clamp) {
    weight_ = add_parameter("weight", {max_len, d}, ParamKind::embedding);
  }

  Tensor encode_input(const Tensor& x, const IndexArray& positions) override {
    IndexArray rows = positions;
    std::int32_t* p = rows.data();
    const std::int32_t top = rows.size() ? *std::max_element(p, p + rows.size()) : 0;
    if (rows.size() && *std::min_element(p, p + rows.size()) < 0)
      throw Error("encoding 'learned': negative position id in the batch");
    if (auto why = unsupported(top)) throw Error(*why);
    for (std::size_t i = 0; i < rows.size(); ++i)  // only reached beyond max_len when clamping
      p[i] = std::min(p[i], static_cast<std::int32_t>(max_len_ - 1));
    return add(x, embedding(weight_, rows));  // (B, T, C) + (B, T, C)
  }

  std::optional<std::string> unsupported(std::int64_t max_position) const override {
    if (clamp_ || max_position < static_cast<std::int64_t>(max_len_)) return std::nullopt;
    return "encoding 'learned': position " + std::to_string(max_position) + " is beyond its table of " +
           std::to_string(max_len_) + " rows (max_len); set encoding.learned.clamp = true to reuse the last row";
  }

 private:
  Tensor weight_;
  std::size_t max_len_;
  bool clamp_;
};

PELAB_REGISTER_ENCODING(learned, encoding_spec("learned",
    "trainable absolute position table added to the embeddings (GPT-2)")
    .params({
        integer_param("max_len", 0,
            "table rows; 0 = the ids training uses: the longest training sequence, or [train] max_position "
            "under offset/randomized positions (config.toml records the value; ids beyond the table are "
            "unsupported)").in(0.0, 1e6),
        bool_param("clamp", false, "reuse the last row for positions >= max_len instead of failing"),
    })
    .make([](const Params& p, const ModelDims& dims) {
      std::size_t max_len = static_cast<std::size_t>(p.get_int("max_len"));
      if (max_len == 0) max_len = dims.max_position;
      if (max_len == 0) throw Error("encoding 'learned': max_len is 0 and the training position range is unknown");
      return std::make_unique<Learned>(max_len, dims.d_model, p.get_bool("clamp"));
    })
    .input_level());
PELAB_REGISTER_AUTO_SIZE(learned_max_len, "learned", "max_len", [](const Params&, const ModelDims& d) {
  return d.max_position ? std::optional<std::int64_t>(d.max_position) : std::nullopt;
});

}  // namespace
}  // namespace pelab
