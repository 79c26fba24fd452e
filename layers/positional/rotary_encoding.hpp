// The encodings that only rotate q and k by tables of the position ids (RoPE, HoPE, xPos) share one
// life cycle for their tables: built on the first layer's call for these ids, kept while the same ids
// come back (training with contiguous ids builds them once), shared by every layer.
#pragma once

#include <memory>
#include <optional>

#include "core/ops/rotary.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"  // SeenPositions

namespace pelab {

// The `layout` parameter's value ("interleaved" or "half") as a RotaryLayout.
RotaryLayout rotary_layout_of(const Params& p);

// A subclass says how its tables are built (build_tables); the hooks are written here once: encode_qk
// rotates q and k (the split-heads path), rotary_qk hands the tables to the packed path.
class RotaryEncoding : public PositionalEncoding {
 public:
  explicit RotaryEncoding(RotaryLayout layout) : layout_(layout) {}

  void begin_forward(const IndexArray& positions) override;
  std::optional<RotaryQK> rotary_qk(const AttentionContext& ctx) override;
  void encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) override;

 protected:
  // q's and k's cos and sin tables (B, T, pairs) for these ids (B, T); one table twice where they agree.
  struct QKTables {
    std::shared_ptr<const RotaryTables> q, k;
  };
  virtual QKTables build_tables(const IndexArray& positions) const = 0;

 private:
  RotaryLayout layout_;
  SeenPositions seen_;
  QKTables tables_;
};

}  // namespace pelab
