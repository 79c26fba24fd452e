// Tensor: a float32 array (contiguous, row-major, on xtensor storage) plus what autograd needs.
//
// A Tensor is a cheap handle (shared ownership) to a TensorImpl holding the value, the gradient
// (allocated on first accumulation), requires_grad, a version counter bumped by every in-place
// write, and the tape node that produced it. Ops live in core/ops/; the tape in core/tape.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "core/allocator.hpp"

namespace pelab {

// The engine's scalar. float32 everywhere; the gradient-check build (pelab_core_f64) compiles the
// very same sources with double so finite differences are taken in double precision.
#ifdef PELAB_REAL_DOUBLE
using real = double;
#else
using real = float;
#endif

// Storage from the caching allocator (core/allocator.hpp): steady-state steps reuse buffers.
using Array = xt::xarray<real, xt::layout_type::row_major, memory::CachingAllocator<real>>;
using Shape = Array::shape_type;  // small-vector: no heap allocation up to 4 dims
// Integer inputs (token ids, position ids, targets) and index tables, never part of autograd. From the
// caching allocator too, so that a shape-only run (core/shape_only.hpp) counts them: a (rows, T, T)
// bucket table is 40 GB at T = 100 000.
using IndexArray = xt::xarray<std::int32_t, xt::layout_type::row_major, memory::CachingAllocator<std::int32_t>>;

std::string shape_str(const Shape& s);
std::size_t shape_numel(const Shape& s);
// A copy of a (`Array b = a` allocates the same way); in a shape-only run (core/shape_only.hpp) allocated
// and not read, as a has no values.
Array array_copy(const Array& a);

// Thrown for every misuse the engine detects (shape mismatch, consumed tape, ...): never abort.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorImpl {
  Array value;                  // released (emptied) once no handle can read it, see Tensor
  Shape released_shape;         // the value's shape, kept when the value is released
  Array grad;                   // meaningful only when has_grad
  bool has_grad = false;
  bool requires_grad = false;
  bool retain_grad = false;     // keep the grad of a non-leaf after backward
  std::uint64_t version = 0;    // bumped by each in-place write
  std::int64_t node = -1;       // index of the producing node on the tape; -1 for leaves
  std::uint64_t epoch = 0;      // tape epoch of that node (detects consumed tapes)
  std::int64_t handles = 0;     // live Tensor handles (the value's readers)
  bool released = false;
};

// A Tensor handle can read the value. Memory rule: when the last handle to a recorded intermediate
// (a non-leaf) goes away, nobody can read its value any more, so the value's storage is released at
// once; the tape keeps the TensorImpl alive only to route its gradient (a node's inputs are gradient
// targets, not readers; the values a backward reads are the node's saved handles, core/tape.hpp).
// This frees e.g. the fused qkv output right after the heads are split, instead of at the end of
// backward.
// Handles are counted without atomics: like the tape, a graph belongs to one thread.
class Tensor {
 public:
  Tensor() = default;  // null handle
  explicit Tensor(Array value, bool requires_grad = false);
  Tensor(const Tensor& o) : impl_(o.impl_) { acquire(); }
  Tensor(Tensor&& o) noexcept : impl_(std::move(o.impl_)) {}
  Tensor& operator=(const Tensor& o) {
    Tensor tmp(o);
    std::swap(impl_, tmp.impl_);
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(impl_, o.impl_);
    return *this;
  }
  ~Tensor() { release(); }

  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, real v, bool requires_grad = false);
  static Tensor scalar(real v, bool requires_grad = false);
  static Tensor from(const Shape& shape, const std::vector<real>& values, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& shared() const { return impl_; }

  // ---- value ----
  const Array& value() const { return check().value; }
  const real* data() const { return check().value.data(); }
  // Writable access counts as an in-place modification: it bumps the version so a tape node that
  // saved this tensor for backward can detect it.
  Array& mutable_value();
  real* mutable_data() { return mutable_value().data(); }
  const Shape& shape() const { return check().value.shape(); }
  std::size_t ndim() const { return shape().size(); }
  std::size_t size(int axis) const;  // negative axes count from the end
  std::size_t numel() const { return check().value.size(); }
  real item() const;                 // the value of a one-element tensor
  std::uint64_t version() const { return check().version; }

  // ---- autograd ----
  bool requires_grad() const { return check().requires_grad; }
  Tensor& set_requires_grad(bool on = true);
  bool is_leaf() const { return check().node < 0; }
  bool has_grad() const { return check().has_grad; }
  const Array& grad() const;         // throws if no gradient was accumulated
  void zero_grad();                  // drops the gradient (next accumulation starts from zero)
  void retain_grad() { check().retain_grad = true; }
  // Seeds d(self)/d(self) = 1 (self must have one element) and runs the tape backward.
  void backward() const;
  // Seeds with an explicit gradient of self's shape.
  void backward(const Array& seed) const;

  // A new leaf sharing nothing with this tensor: the value copied, no history.
  Tensor detach() const;

 private:
  TensorImpl& check() const;
  void acquire() {
    if (impl_) ++impl_->handles;
  }
  void release() noexcept;
  std::shared_ptr<TensorImpl> impl_;
};

// Gradient buffer of t, allocated as zeros on first use. Ops reach it through BackwardCtx::grad
// (core/tape.hpp) and accumulate (+=) into it.
Array& grad_buffer(TensorImpl& t);
// Gradient buffer of t for a writer of every element: when t has no gradient yet, a buffer of the right
// shape is handed out WITHOUT zeroing and fresh = true (the caller must write, not accumulate, every
// element); otherwise the existing one with fresh = false (accumulate). Writing instead of zeroing then
// adding gives the same bits (0 + x = x) and saves a pass over the buffer. BackwardCtx::grad_write.
// Builds defining PELAB_POISON_FRESH_GRADS (the double build the gradient checks use) fill fresh
// buffers with NaN, so an element a writer forgot shows up in every gradient check.
Array& grad_buffer_for_write(TensorImpl& t, bool& fresh);

}  // namespace pelab

// Beware: `Array a({2, 3})` is a 1-D array holding 2 and 3 (xtensor's nested-list constructor).
// Construct from a shape with `Array a(Shape{2, 3})`.
