// The tape: reverse-mode autograd by recording.
//
// Semantics (tested in tests/core/test_tape.cpp):
// - Every op whose inputs require grad (and grad mode is on) appends one node to the thread's tape, in
//   creation order. backward(root) walks the nodes from root's back to the first, calling each node's
//   backward with its output's gradient; each node accumulates (+=) into its inputs' gradients.
// - Leaf gradients accumulate across backward() calls until zero_grad(). Non-leaf gradients are freed
//   once their node has run, unless retain_grad() was called.
// - backward() consumes the whole tape: afterwards the tape is empty and a second backward through a
//   tensor recorded on it throws Error (it never replays freed state).
// - Inside a NoGrad scope ops record nothing and results do not require grad (evaluation).
// - Tensors saved for backward remember their version; if one was written in place before backward
//   runs (Tensor::mutable_value bumps the version), backward throws Error naming the op.
// - A root with more than one element needs an explicit seed gradient; otherwise Error.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

using BackwardFn = std::function<void(const Array& grad_out)>;

struct Node {
  const char* op = "";
  std::shared_ptr<TensorImpl> output;
  std::vector<std::shared_ptr<TensorImpl>> saved;  // kept alive until backward; version-checked
  std::vector<std::uint64_t> saved_versions;
  BackwardFn backward;
};

class Tape {
 public:
  static Tape& current();  // one tape per thread

  bool grad_enabled() const { return grad_enabled_; }
  std::size_t size() const { return nodes_.size(); }
  std::uint64_t epoch() const { return epoch_; }

  // True when an op over these inputs must be recorded.
  bool should_record(std::initializer_list<const Tensor*> inputs) const;
  bool should_record(const std::vector<Tensor>& inputs) const;

  // Appends a node producing `out` (marked requires_grad). `saved` lists every tensor the backward
  // function reads (inputs and/or the output): they are kept alive and version-checked.
  void record(const char* op, Tensor& out, std::vector<Tensor> saved, BackwardFn fn);

  void backward(const Tensor& root, const Array* seed);

  // Drops every recorded node without running it (e.g. a forward pass that will not be
  // backpropagated). Tensors recorded so far can no longer be backpropagated.
  void clear();

 private:
  friend class NoGrad;
  std::vector<Node> nodes_;
  std::uint64_t epoch_ = 1;
  bool grad_enabled_ = true;
};

// RAII scope in which nothing is recorded (evaluation, optimizer updates).
class NoGrad {
 public:
  NoGrad() : prev_(Tape::current().grad_enabled_) { Tape::current().grad_enabled_ = false; }
  ~NoGrad() { Tape::current().grad_enabled_ = prev_; }
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool prev_;
};

}  // namespace pelab
