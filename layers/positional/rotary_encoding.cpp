#include "layers/positional/rotary_encoding.hpp"

namespace pelab {

RotaryLayout rotary_layout_of(const Params& p) {
  return p.get_string("layout") == "half" ? RotaryLayout::half : RotaryLayout::interleaved;
}

void RotaryEncoding::begin_forward(const IndexArray& positions) {
  if (seen_.same(positions)) return;
  tables_ = build_tables(positions);
  seen_.set(positions);
}

std::optional<RotaryQK> RotaryEncoding::rotary_qk(const AttentionContext& ctx) {
  if (!seen_.same(ctx.positions)) begin_forward(ctx.positions);
  return RotaryQK{tables_.q, tables_.k, layout_};
}

void RotaryEncoding::encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) {
  const RotaryQK r = *rotary_qk(ctx);
  q = rotary(q, r.q, r.layout);
  k = rotary(k, r.k, r.layout);
}

}  // namespace pelab
