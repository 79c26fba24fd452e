// NoPE: no positional information at all. With causal attention a model can still infer positions
// (from how many tokens it attends over); with bidirectional attention it is permutation-equivariant.
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

class NoPE : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }
};

PELAB_REGISTER_ENCODING(none, encoding_spec("none",
    "NoPE: no positional encoding (causal attention alone carries order)")
    .relative()
    .make([](const Params&, const ModelDims&) { return std::make_unique<NoPE>(); })
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
