// embedding: forward (gather rows) and backward (scatter-add rows) side by side.
#include "core/ops/embedding.hpp"

#include <algorithm>

#include "core/ops/common.hpp"

namespace pelab {

Tensor embedding(const Tensor& table, const IndexArray& ids) {
  const char* op = "embedding";
  detail::require_defined(table, op, "table");
  detail::require(table.ndim() == 2, op, "table must be 2-D (V, D), got " + shape_str(table.shape()));
  const std::size_t V = table.size(0), D = table.size(1), n = ids.size();
  const std::int32_t* pid = ids.data();
  // Shape-only (core/shape_only.hpp): ids may be a table derived in the dry run (no values): not read.
  for (std::size_t i = 0, m = shape_only() ? 0 : n; i < m; ++i)  // validate everything before touching memory
    if (pid[i] < 0 || static_cast<std::size_t>(pid[i]) >= V)
      throw Error(std::string(op) + ": id " + std::to_string(pid[i]) + " at position " + std::to_string(i) +
                  " is out of range for a table of " + std::to_string(V) + " rows");
  Shape out_shape(ids.shape().begin(), ids.shape().end());
  out_shape.push_back(D);
  Tensor out = detail::empty(out_shape);
  {
    const real* pt = table.data();
    real* po = out.mutable_data();
    for (std::size_t i = 0, m = shape_only() ? 0 : n; i < m; ++i) {
      const real* row = pt + static_cast<std::size_t>(pid[i]) * D;
      std::copy(row, row + D, po + i * D);
    }
  }
  Tape& tape = Tape::current();
  if (tape.should_record({&table})) {
    // ids copied into the closure: the caller may reuse its buffer before backward runs. Shape-only:
    // allocated, not copied (a bucket table made in a dry run is never filled: core/shape_only.hpp).
    IndexArray kept = shape_only() ? IndexArray(ids.shape()) : ids;
    tape.record(op, out, {table}, {}, [ids = std::move(kept), D](const BackwardCtx& c) {
      real* gt = c.grad(0);
      const real* pg = c.grad_out().data();
      const std::int32_t* pid = ids.data();
      for (std::size_t i = 0, n = shape_only() ? 0 : ids.size(); i < n; ++i) {
        real* dst = gt + static_cast<std::size_t>(pid[i]) * D;
        const real* src = pg + i * D;
        for (std::size_t j = 0; j < D; ++j) dst[j] += src[j];
      }
    });
  }
  return out;
}

}  // namespace pelab
