// Shape-only execution (a TRIAL, issue #40; docs/architecture.md, "Shape-only execution: the trial").
//
// Inside a ShapeOnly scope, on the calling thread, every request to the caching allocator
// (core/allocator.hpp) is answered with a block that is never backed by memory (addresses in one
// PROT_NONE reservation: a kernel that forgets to skip faults at once instead of reading garbage), and
// the converted ops compute their output shapes, allocate exactly what they allocate in a real run, and
// skip their kernels. The scope records every request and release in allocation order, so the memory a
// forward (and backward) would take comes from the code that runs, not from a second description of it.
// The idea of PyTorch's meta tensors / FakeTensor and JAX's eval_shape.
//
// Converted so far (the trial): layer_norm, linear, linear_gelu, matmul, split_heads, merge_heads,
// softmax, the elementwise binary ops, mul_scalar / add_scalar, gelu and the other unary ops, sum and
// mean over all axes, the tape's seed, Tensor::zeros / full, gradient buffers, and ALiBi's bias
// (layers/positional/alibi.cpp, pairwise.cpp). An op not converted faults on its first read.
//
// A TraceScope records the same events for a real run, so the two traces can be compared (tests).
#pragma once

#include <cstddef>
#include <map>
#include <vector>

namespace pelab {

// True inside a ShapeOnly scope on this thread: ops allocate but skip their kernels.
bool shape_only();

namespace memory {

struct TraceEvent {
  std::size_t cls = 0;  // size class (bytes), as the allocator reserves it
  bool alloc = true;    // a request, or a release
  bool operator==(const TraceEvent& o) const { return cls == o.cls && alloc == o.alloc; }
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
