// Stick-breaking attention (Tan et al., "Scaling Stick-Breaking Attention", ICLR 2025): no position
// vector or bias; the softmax is replaced by A_ij = beta_ij prod_{j<k<i} (1 - beta_ik), beta =
// sigmoid(q_i . k_j / sqrt(hs)), so the nearest keys take their share of the weight first and order
// comes from the normalizer itself (core/ops/stick_breaking.hpp has the kernels). As the authors'
// reference (flash-linear-attention fla/ops/stickbreaking_attn/naive.py, attend_current = False by
// default) a query does not attend to its own key unless attend_current, and the weights' remainder
// (1 - sum_j A_ij) is dropped. Causal models only. A function of the order of keys alone: relative.
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

class StickBreaking : public PositionalEncoding {
 public:
  explicit StickBreaking(bool attend_current) : attend_current_(attend_current) {}
  bool leaves_qk_alone() const override { return true; }
  void choose_normalizer(AttentionOptions& o) const override {
    o.normalizer = Normalizer::stick_breaking;
    o.attend_current = attend_current_;
  }

 private:
  bool attend_current_;
};

PELAB_REGISTER_ENCODING(stick_breaking, encoding_spec("stick_breaking",
    "stick-breaking attention: sigmoid weights broken off from the nearest key back, no position vector (Tan et al. 2025)")
    .relative()
    .replaces_softmax()
    .params({bool_param("attend_current", false,
                        "a query attends to its own key too; false: only to earlier keys (the authors' reference "
                        "default)")})
    .validate([](const Params&, const ModelDims& dims) {
      if (!dims.causal)
        throw Error("stick_breaking needs causal attention (model.causal = true): it breaks the stick from the "
                    "nearest earlier key");
    })
    .make([](const Params& p, const ModelDims&) {
      return std::make_unique<StickBreaking>(p.get_bool("attend_current"));
    })
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
