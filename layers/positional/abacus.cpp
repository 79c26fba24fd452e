// Abacus embeddings (McLeish et al. 2024, "Transformers Can Do Arithmetic with the Right Embeddings",
// arXiv 2405.17399): a trainable table indexed by each digit's index within its number (1-based; 0 for
// every non-digit token), added to the token embeddings. The task supplies the indices
// (Batch::digit_index, InputContext::digit_index); with operands written least significant digit
// first, index 1 is the units digit of every number, so digits of the same significance share a row.
// In training every nonzero index is shifted by one k uniform in [0, max_k] per forward pass, so that
// rows beyond the training lengths are trained too; evaluation uses k = 0. As their code does
// (github.com/mcleish7/arithmetic, abacus.py and cramming/architectures/embeddings.py Abacus.forward:
// `k = random.randint(0, self.max_k)` once per call, `output[output > 0] += k`; config max_abacus_len = 100).
// It reads no position ids: the attention layers may run another encoding ([encoding] layers, e.g. "fire"),
// as the paper pairs Abacus with NoPE or FIRE.
#include <algorithm>

#include "core/ops/elementwise.hpp"
#include "core/shape_only.hpp"
#include "core/ops/embedding.hpp"
#include "layers/positional/auto_size.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

class Abacus : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
  Abacus(std::size_t rows, std::size_t d, std::size_t max_k) : rows_(rows), max_k_(max_k) {
    weight_ = add_parameter("weight", {rows, d}, ParamKind::embedding);
  }

  // x (B, T, C) + weight[digit index (+ k)] (B, T, C). A batch without indices (a task that supplies none;
  // configs refuse that pairing) reads as all non-digits: row 0 everywhere.
  Tensor encode_input_context(const Tensor& x, const InputContext& ctx) override {
    IndexArray ids = ctx.digit_index ? *ctx.digit_index : IndexArray(ctx.positions.shape(), 0);  // (B, T)
    if (ids.shape() != ctx.positions.shape()) throw Error("encoding 'abacus': digit indices and tokens differ in shape");
    std::int32_t* p = ids.data();
    if (ids.size() && *std::min_element(p, p + ids.size()) < 0) throw Error("encoding 'abacus': negative digit index");
    // A shape-only run (core/shape_only.hpp) draws nothing: the offset changes no shape.
    const auto k = std::int32_t(training() && ctx.rng && max_k_ > 0 && !shape_only() ? ctx.rng->below(max_k_ + 1) : 0);
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (p[i] > 0) p[i] += k;
    const std::int32_t top = ids.size() ? *std::max_element(p, p + ids.size()) : 0;
    if (auto why = unsupported_digits(top)) throw Error(*why);
    return add(x, embedding(weight_, ids));
  }

  std::optional<std::string> unsupported_digits(std::int64_t max_index) const override {
    if (max_index < static_cast<std::int64_t>(rows_)) return std::nullopt;
    return "encoding 'abacus': digit index " + std::to_string(max_index) + " is beyond its table of " +
           std::to_string(rows_) + " rows (size)";
  }

 private:
  Tensor weight_;  // (rows, C); row 0: every non-digit token
  std::size_t rows_, max_k_;
};

std::size_t abacus_rows(const Params& p, const ModelDims& d) {
  const auto size = std::size_t(p.get_int("size"));
  return size ? size : d.train_seq_len + std::size_t(p.get_int("max_k")) + 1;
}

PELAB_REGISTER_ENCODING(abacus, encoding_spec("abacus",
    "learned table of each digit's index in its number, random offset in training (McLeish et al. 2024)")
    .relative()  // it reads no position ids at all
    .params({
        integer_param("max_k", 100, "training shifts every digit index by one k uniform in [0, max_k] per forward "
                                    "pass (McLeish et al.'s max_abacus_len = 100); 0 = no shift").in(0.0, 1e5),
        integer_param("size", 0, "table rows (index 0 = non-digits); 0 = the longest training sequence + max_k + 1 "
                                 "(config.toml records the value; larger indices are unsupported)").in(0.0, 1e6),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Abacus>(abacus_rows(p, dims), dims.d_model, std::size_t(p.get_int("max_k")));
    })
    .input_level()
    .reads_digit_index()
    .reads_position_ids(false));
PELAB_REGISTER_AUTO_SIZE(abacus_size, "abacus", "size", [](const Params& p, const ModelDims& d) {
  return d.train_seq_len ? std::optional<std::int64_t>(abacus_rows(p, d)) : std::nullopt;
});

}  // namespace
}  // namespace pelab
