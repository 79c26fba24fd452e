// Shape-only execution (issue #40; docs/architecture.md, "Shape-only execution").
//
// Inside a ShapeOnly scope, on the calling thread, every request to the caching allocator
// (core/allocator.hpp) is answered with a block that is never backed by memory (addresses in one
// PROT_NONE reservation: a kernel that forgets to skip faults at once instead of reading garbage), and
// every op computes its output shapes, allocates exactly what it allocates in a real run, and skips its
// kernel. Integer blocks (IndexArray: ids, and tables made from them) are the exception: they are real,
// mapped without reserving memory, so that what is computed from the ids in O(B T) (copies, offsets, the
// range of a table) is real, while an O(T^2) table that a dry run never fills costs address space only.
// The scope records every request and release in allocation order, so the memory a forward (and
// backward) would take comes from the code that runs, not from a second description of it. The idea of
// PyTorch's meta tensors / FakeTensor and JAX's eval_shape. layers/dry_run.hpp runs a whole model so.
//
// The skip points: the loop helpers of core/ops/common.hpp, parallel::for_range and blas::gemm return at
// once in the mode; ops and encodings with raw loops test shape_only() (a backward after taking its
// gradient buffers, which must still be asked for in the same order); array_copy (core/tensor.hpp)
// allocates without reading. tests/layers/test_shape_only_registry.cpp compares the trace of every
// encoding and variant with the real run's.
//
// A TraceScope records the same events for a real run, so the two traces can be compared (tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace pelab {

// True inside a ShapeOnly scope on this thread: ops allocate but skip their kernels.
bool shape_only();

namespace memory {

struct TraceEvent {
  std::size_t cls = 0;  // size class (bytes), as the allocator reserves it
  bool alloc = true;    // a request, or a release
  bool step = false;    // memory::begin_step (cls and alloc unused)
  bool operator==(const TraceEvent& o) const { return cls == o.cls && alloc == o.alloc && step == o.step; }
};

// What a trace amounts to: per size class, how many requests and how many live at once; the most bytes
// live at once; and the bytes a cold allocator would have obtained from the system at its peak, under the
// allocator's own reuse rule (memory::keeps_freed_block): the estimate.
struct TraceSummary {
  std::map<std::size_t, std::size_t> requests;   // size class -> requests
  std::map<std::size_t, std::size_t> peak_live;  // size class -> most blocks live at once
  std::size_t peak_live_bytes = 0;
  std::size_t peak_system_bytes = 0;
  bool operator==(const TraceSummary& o) const {
    return requests == o.requests && peak_live == o.peak_live && peak_live_bytes == o.peak_live_bytes &&
           peak_system_bytes == o.peak_system_bytes;
  }
};

struct Trace {
  std::vector<TraceEvent> events;
  TraceSummary summary() const;
};

// Records every allocator request and release (any thread) while alive. One recording scope at a time.
class TraceScope {
 public:
  // fake_blocks: record the ShapeOnly scope's blocks instead of real ones (ShapeOnly uses it).
  explicit TraceScope(bool fake_blocks = false);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  const Trace& trace() const { return trace_; }

 private:
  Trace trace_;
};

// Blocks handed out by ShapeOnly scopes and not yet released (a test of the scope's hygiene).
std::size_t fake_blocks_live();

// Data-dependent shapes: the one place (issue #40). A table built in a shape-only run has no values; when
// a later op sizes something by those values (the attention spans the relative buckets its visible pairs
// use: core/ops/attention_dims.cpp), the table's builder notes the range here, computed from the ids,
// which are real in a dry run (layers/positional/pairwise.hpp pairwise_index). Dropped when the block is.
struct ValueRange {
  std::int32_t lo = 0, hi = -1;  // hi < lo: no value
};
struct IndexFacts {
  ValueRange all;     // over every pair of the table
  ValueRange causal;  // over the pairs a causal attention reads (key id index <= query's)
};
void note_index_facts(const void* fake_block, const IndexFacts& facts);  // no-op for a real block
// The facts noted for a fake block; nullptr if none.
const IndexFacts* index_facts(const void* fake_block);

}  // namespace memory

// The shape-only mode on this thread, recording its trace. Build the model to estimate INSIDE the scope
// (its parameters are then fake blocks: nothing allocated, nothing initialized) and drop every tensor of
// it before the scope ends; a fake block released after the scope is still recognized and dropped.
class ShapeOnly {
 public:
  ShapeOnly();
  ~ShapeOnly();
  ShapeOnly(const ShapeOnly&) = delete;
  ShapeOnly& operator=(const ShapeOnly&) = delete;
  const memory::Trace& trace() const { return trace_.trace(); }

 private:
  bool prev_;
  memory::TraceScope trace_;
};

}  // namespace pelab
