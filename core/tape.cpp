#include "core/tape.hpp"

#include <string>

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

void Tape::record(const char* op, Tensor& out, std::vector<Tensor> saved, BackwardFn fn) {
  Node n;
  n.op = op;
  n.output = out.shared();
  n.saved.reserve(saved.size());
  n.saved_versions.reserve(saved.size());
  for (auto& s : saved) {
    if (!s.defined()) continue;
    n.saved_versions.push_back(s.impl()->version);
    n.saved.push_back(s.shared());
  }
  n.backward = std::move(fn);
  TensorImpl& o = *out.impl();
  o.requires_grad = true;
  o.node = static_cast<std::int64_t>(nodes_.size());
  o.epoch = epoch_;
  nodes_.push_back(std::move(n));
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
    for (std::size_t i = 0, n = seed->size(); i < n; ++i) g[i] += sd[i];
  } else {
    if (r.value.size() != 1)
      throw Error("backward: tensor of shape " + shape_str(r.value.shape()) +
                  " is not a scalar; pass a seed gradient of the same shape");
    grad_buffer(r).data()[0] += real(1);
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
    for (std::size_t s = 0; s < n.saved.size(); ++s)
      if (n.saved[s]->version != n.saved_versions[s])
        throw Error(std::string("backward: a tensor saved by op '") + n.op +
                    "' was modified in place after it was saved (version " +
                    std::to_string(n.saved_versions[s]) + " -> " + std::to_string(n.saved[s]->version) +
                    "); clone it before writing, or run the forward pass again");
    n.backward(out.grad);
    if (!out.retain_grad) {  // non-leaf: free its gradient now, as PyTorch does
      out.has_grad = false;
      out.grad = Array();
    }
    n = Node();  // release saved tensors as we go: peak memory falls during backward
  }
}

}  // namespace pelab
