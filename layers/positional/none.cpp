// NoPE: no positional information at all. With causal attention a model can still infer positions
// (from how many tokens it attends over); with bidirectional attention it is permutation-equivariant.
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

class NoPE : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
};

// Nothing: the token embeddings go straight to the first block.
static EncodingCost none_cost(const Params&, const ModelDims&, const ForwardShape&) { return EncodingCost{}; }

PELAB_REGISTER_ENCODING(none, encoding_spec("none",
    "NoPE: no positional encoding (causal attention alone carries order)")
    .relative()
    .make([](const Params&, const ModelDims&) { return std::make_unique<NoPE>(); })
    .cost(none_cost)
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
