#include "core/tape.hpp"

#include <string>
#include <type_traits>

#include "core/shape_only.hpp"

namespace pelab {

Tape& Tape::current() {
  thread_local Tape tape;
  return tape;
}

bool Tape::should_record(std::initializer_list<const Tensor*> inputs) const {
  if (!grad_enabled_) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool Tape::should_record(const std::vector<Tensor>& inputs) const {
  if (!grad_enabled_) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// Nodes move when the tape grows: they must move, never copy (a copy would copy every closure).
static_assert(std::is_nothrow_move_constructible<Node>::value, "Node must be nothrow-movable");

void Tape::record(const char* op, Tensor& out, TensorList inputs, TensorList saved, BackwardFn fn) {
  Node n;
  n.op = op;
  n.output = out.shared();
  for (const Tensor& t : inputs) n.inputs.push_back(t.defined() && t.requires_grad() ? t.shared() : nullptr);
  for (const Tensor& s : saved) {
    if (s.defined()) {
      bool known = s.impl() == out.impl();
      for (const Tensor& t : inputs) known = known || s.impl() == t.impl();
      if (!known)
        throw Error(std::string("record: op '") + op +
                    "' saves a tensor that is neither one of its inputs nor its output");
    }
    n.saved.push_back({s, s.defined() ? s.impl()->version : 0});
  }
  n.backward = std::move(fn);
  TensorImpl& o = *out.impl();
  o.requires_grad = true;
  o.node = static_cast<std::int64_t>(nodes_.size());
  o.epoch = epoch_;
  nodes_.push_back(std::move(n));
}

const real* BackwardCtx::saved(std::size_t k) const {
  if (k >= n_.saved.size())
    throw Error(std::string("backward of '") + n_.op + "': saved value " + std::to_string(k) + " of " +
                std::to_string(n_.saved.size()) + " requested");
  const Tensor& t = n_.saved[k].value;
  return t.defined() ? t.data() : nullptr;
}

bool BackwardCtx::needs_grad(std::size_t i) const {
  if (i >= n_.inputs.size())
    throw Error(std::string("backward of '") + n_.op + "': input " + std::to_string(i) + " of " +
                std::to_string(n_.inputs.size()) + " requested");
  return n_.inputs[i] != nullptr;
}

real* BackwardCtx::grad(std::size_t i) const {
  return needs_grad(i) ? grad_buffer(*n_.inputs[i]).data() : nullptr;
}

real* BackwardCtx::grad_write(std::size_t i, bool& fresh) const {
  fresh = false;
  return needs_grad(i) ? grad_buffer_for_write(*n_.inputs[i], fresh).data() : nullptr;
}

bool BackwardCtx::same_input(std::size_t i, std::size_t j) const {
  return needs_grad(i) && needs_grad(j) && n_.inputs[i] == n_.inputs[j];
}

void Tape::clear() {
  nodes_.clear();
  ++epoch_;
}

void Tape::backward(const Tensor& root, const Array* seed) {
  if (!root.defined()) throw Error("backward: undefined tensor");
  TensorImpl& r = *root.impl();
  if (!r.requires_grad)
    throw Error("backward: the tensor does not require grad (no input of its graph requires grad, "
                "or it was computed under NoGrad)");
  if (r.node >= 0 && (r.epoch != epoch_ || static_cast<std::size_t>(r.node) >= nodes_.size()))
    throw Error("backward: the tape that recorded this tensor was already consumed by an earlier "
                "backward() (or cleared); run the forward pass again");
  if (seed) {
    if (seed->shape() != r.value.shape())
      throw Error("backward: seed gradient of shape " + shape_str(seed->shape()) +
                  " does not match the tensor's shape " + shape_str(r.value.shape()));
    real* g = grad_buffer(r).data();
    const real* sd = seed->data();
    if (!shape_only())  // shape-only mode (core/shape_only.hpp): the buffer allocated, not written
      for (std::size_t i = 0, n = seed->size(); i < n; ++i) g[i] += sd[i];
  } else {
    if (r.value.size() != 1)
      throw Error("backward: tensor of shape " + shape_str(r.value.shape()) +
                  " is not a scalar; pass a seed gradient of the same shape");
    real* g = grad_buffer(r).data();
    if (!shape_only()) g[0] += real(1);
  }
  if (r.node < 0) return;  // a leaf: its gradient is the seed

  // Consume the tape whatever happens below: a failed backward must not leave a half-run tape.
  std::vector<Node> nodes;
  nodes.swap(nodes_);
  ++epoch_;
  for (std::int64_t i = r.node; i >= 0; --i) {
    Node& n = nodes[static_cast<std::size_t>(i)];
    TensorImpl& out = *n.output;
    if (!out.has_grad) continue;  // not on a path to the root
    for (std::size_t s = 0; s < n.saved.size(); ++s) {
      const SavedValue& sv = n.saved[s];
      if (sv.value.defined() && sv.value.impl()->version != sv.version)
        throw Error(std::string("backward: a tensor saved by op '") + n.op +
                    "' was modified in place after it was saved (version " + std::to_string(sv.version) +
                    " -> " + std::to_string(sv.value.impl()->version) +
                    "); clone it before writing, or run the forward pass again");
    }
    n.backward(BackwardCtx(n, out.grad));
    if (!out.retain_grad) {  // non-leaf: free its gradient now, as PyTorch does
      out.has_grad = false;
      out.grad = Array();
    }
    n = Node();  // release saved tensors as we go: peak memory falls during backward
  }
}

}  // namespace pelab
