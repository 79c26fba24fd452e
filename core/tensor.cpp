#include "core/tensor.hpp"

#include <limits>
#include <sstream>

#include "core/shape_only.hpp"
#include "core/tape.hpp"

namespace pelab {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  if (s.size() == 1) os << ',';
  os << ')';
  return os.str();
}

std::size_t shape_numel(const Shape& s) {
  std::size_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Tensor::Tensor(Array value, bool requires_grad) : impl_(std::make_shared<TensorImpl>()) {
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
  impl_->handles = 1;
}

void Tensor::release() noexcept {
  if (!impl_) return;
  TensorImpl& t = *impl_;
  // Last handle of a recorded intermediate that something else (the tape) still holds: nobody can
  // read the value again, so give its storage back now.
  if (--t.handles == 0 && t.node >= 0 && !t.released && impl_.use_count() > 1) {
    t.released = true;
    t.released_shape = t.value.shape();
    t.value = Array();
  }
}

// Shape-only mode (core/shape_only.hpp): the block is allocated, never written.
Tensor Tensor::zeros(const Shape& shape, bool requires_grad) {
  Array a(shape);
  if (!shape_only()) a.fill(real(0));
  return Tensor(std::move(a), requires_grad);
}

Array array_copy(const Array& a) { return shape_only() ? Array(a.shape()) : a; }

Tensor Tensor::full(const Shape& shape, real v, bool requires_grad) {
  Array a(shape);
  if (!shape_only()) a.fill(v);
  return Tensor(std::move(a), requires_grad);
}

Tensor Tensor::scalar(real v, bool requires_grad) {
  Array a(Shape{});
  if (!shape_only()) a() = v;
  return Tensor(std::move(a), requires_grad);
}

Tensor Tensor::from(const Shape& shape, const std::vector<real>& values, bool requires_grad) {
  if (shape_numel(shape) != values.size())
    throw Error("Tensor::from: shape " + shape_str(shape) + " holds " +
                std::to_string(shape_numel(shape)) + " values, got " + std::to_string(values.size()));
  Array a(shape);
  if (!shape_only()) std::copy(values.begin(), values.end(), a.begin());
  return Tensor(std::move(a), requires_grad);
}

TensorImpl& Tensor::check() const {
  if (!impl_) throw Error("use of an undefined (null) Tensor");
  return *impl_;
}

Array& Tensor::mutable_value() {
  auto& t = check();
  ++t.version;
  return t.value;
}

std::size_t Tensor::size(int axis) const {
  const int nd = static_cast<int>(ndim());
  const int a = axis < 0 ? axis + nd : axis;
  if (a < 0 || a >= nd)
    throw Error("Tensor::size: axis " + std::to_string(axis) + " out of range for shape " +
                shape_str(shape()));
  return shape()[static_cast<std::size_t>(a)];
}

real Tensor::item() const {
  if (shape_only()) throw Error("Tensor::item: a shape-only run has no values (core/shape_only.hpp)");
  if (numel() != 1) throw Error("Tensor::item: tensor of shape " + shape_str(shape()) + " is not one element");
  return *data();
}

Tensor& Tensor::set_requires_grad(bool on) {
  auto& t = check();
  if (!on && t.node >= 0) throw Error("set_requires_grad(false) on a tensor produced by a recorded op");
  t.requires_grad = on;
  return *this;
}

const Array& Tensor::grad() const {
  auto& t = check();
  if (!t.has_grad)
    throw Error("Tensor::grad: no gradient has been accumulated into this tensor (shape " +
                shape_str(t.value.shape()) + ")");
  return t.grad;
}

void Tensor::zero_grad() {
  auto& t = check();
  t.has_grad = false;
  t.grad = Array();
}

void Tensor::backward() const { Tape::current().backward(*this, nullptr); }
void Tensor::backward(const Array& seed) const { Tape::current().backward(*this, &seed); }

Tensor Tensor::detach() const { return Tensor(Array(value()), false); }

Array& grad_buffer_for_write(TensorImpl& t, bool& fresh) {
  fresh = !t.has_grad;
  if (fresh) {
    const Shape& shape = t.released ? t.released_shape : t.value.shape();
    if (t.grad.shape() != shape) t.grad.resize(shape);
#ifdef PELAB_POISON_FRESH_GRADS
    if (!shape_only()) t.grad.fill(std::numeric_limits<real>::quiet_NaN());
#endif
    t.has_grad = true;
  }
  return t.grad;
}

Array& grad_buffer(TensorImpl& t) {
  if (!t.has_grad) {
    const Shape& shape = t.released ? t.released_shape : t.value.shape();
    if (t.grad.shape() != shape) t.grad.resize(shape);
    if (!shape_only()) t.grad.fill(real(0));
    t.has_grad = true;
  }
  return t.grad;
}

}  // namespace pelab
