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
//
// Writing an op's backward (the rule that keeps memory right). A node declares two lists:
//   inputs: every Tensor argument of the op, in order (an undefined optional one included). The tape
//           holds those that require grad as gradient targets only (not readers), so an
//           intermediate's value can still be released when its last handle goes (core/tensor.hpp's
//           memory rule); it does not hold the others at all.
//   saved:  exactly the tensors whose VALUES backward reads, each an input or the output. They are
//           kept alive and version-checked until the node runs. When a value is read only for some
//           input's gradient (matmul's dA reads B), save it only when that input requires grad and
//           pass a null Tensor otherwise: the positions stay fixed.
// backward receives a BackwardCtx with grad_out, saved(k) and grad(i), so
//
//     A CLOSURE NEVER CAPTURES A TENSOR (nor a reference or pointer to one).
//
// A captured handle is a reader: it keeps the value alive until the tape is consumed (a leak), and a
// captured reference dangles. Closures capture plain data only: shapes, scalars, and op-private
// arrays by value or shared_ptr (attention's P, rotary tables, dropout's mask). Example:
//
//   if (tape.should_record({&x}))
//     tape.record("softmax", out, {x}, {out}, [rows, C](const BackwardCtx& c) {
//       real* gx = c.grad(0);           // x's gradient buffer, or nullptr when x needs none
//       const real* y = c.saved(0);     // the output's value
//       const real* g = c.grad_out().data();
//       ...                             // gx[i] += ...
//     });
//
// tests/core/test_lifetimes.cpp checks, op by op, that inputs whose values backward does not read are
// released once the caller drops them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// A read-only view of Tensors for record(): `{a, b}`, `{}` or a std::vector<Tensor>. It refers to
// the caller's list, which lives until the end of the full expression: never keep one.
class TensorList {
 public:
  TensorList() = default;
  TensorList(std::initializer_list<Tensor> l) : list_(l) {}
  TensorList(const std::vector<Tensor>& v) : vec_(&v) {}
  const Tensor* begin() const { return vec_ ? vec_->data() : list_.begin(); }
  const Tensor* end() const { return begin() + size(); }
  std::size_t size() const { return vec_ ? vec_->size() : list_.size(); }

 private:
  std::initializer_list<Tensor> list_;
  const std::vector<Tensor>* vec_ = nullptr;
};

namespace detail {
// A list whose first N entries live inline, so recording a node allocates nothing for its usual
// handful of inputs; concat's longer lists spill into the vector.
template <class T, std::size_t N = 4>
class SmallList {
 public:
  void push_back(T v) {
    if (n_ < N)
      head_[n_] = std::move(v);
    else
      tail_.push_back(std::move(v));
    ++n_;
  }
  const T& operator[](std::size_t i) const { return i < N ? head_[i] : tail_[i - N]; }
  std::size_t size() const { return n_; }

 private:
  std::array<T, N> head_{};
  std::vector<T> tail_;
  std::size_t n_ = 0;
};
}  // namespace detail

class BackwardCtx;
using BackwardFn = std::function<void(const BackwardCtx&)>;

struct SavedValue {
  Tensor value;               // a handle: keeps the value alive until the node has run; null allowed
  std::uint64_t version = 0;  // value's version when saved
};

struct Node {
  const char* op = "";
  std::shared_ptr<TensorImpl> output;
  detail::SmallList<std::shared_ptr<TensorImpl>> inputs;  // gradient targets; null: no grad needed
  detail::SmallList<SavedValue> saved;
  BackwardFn backward;
};

// What a node's backward sees. grad(i) hands out input i's gradient buffer, zero-filled on first
// use, to accumulate (+=) into. grad_write(i, fresh) is for a backward that writes EVERY element of
// input i's gradient: when no other node has contributed yet the buffer comes unzeroed with fresh =
// true and the op writes (=, GEMM beta 0) instead of accumulating, which saves zeroing it (same bits:
// 0 + x = x). Call it right before writing that input's gradient and finish before asking for another
// input's: two inputs may be one tensor (add(x, x)), and the second call then sees the first's writes
// as earlier contributions.
class BackwardCtx {
 public:
  BackwardCtx(const Node& n, const Array& grad_out) : n_(n), g_(grad_out) {}
  const Array& grad_out() const { return g_; }  // d(loss)/d(output), the output's shape
  // Value of the k-th saved tensor; nullptr where a null Tensor was saved.
  const real* saved(std::size_t k) const;
  bool needs_grad(std::size_t i) const;  // input i requires grad
  // Input i's gradient buffer (allocated as zeros on first use); nullptr when input i needs none.
  real* grad(std::size_t i) const;
  // Input i's gradient buffer for a writer of every element (see above); nullptr when input i needs none.
  real* grad_write(std::size_t i, bool& fresh) const;
  // True when inputs i and j are the same tensor (both needing a gradient).
  bool same_input(std::size_t i, std::size_t j) const;

 private:
  const Node& n_;
  const Array& g_;
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

  // Appends a node producing `out` (marked requires_grad); see the rule at the top of this file.
  // Throws Error if a saved tensor is neither an input nor `out`.
  void record(const char* op, Tensor& out, TensorList inputs, TensorList saved, BackwardFn fn);

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
