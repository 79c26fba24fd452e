// Binary elementwise ops with NumPy broadcasting; backward reduces over broadcast axes.
// Kept as ops (docs/architecture.md, the op set): the primitives; minimum as -maximum(-a, -b) is the same
// bits in four passes.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// Elementwise max / min with broadcasting, PyTorch's semantics: a nan on either side gives nan (and
// the gradient reaches both sides); on ties the gradient is split in half between a and b.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// a^b with broadcasting (std::pow), PyTorch's gradients: d/da = b a^(b-1), but 0 where b = 0;
// d/db = a^b log a, but 0 where a = 0 and b >= 0 (the limit: Kerple's |i-j|^r at i = j).
Tensor pow(const Tensor& a, const Tensor& b);

// Scalar forms: y = a + s, y = a * s (and the operators built on them).
Tensor add_scalar(const Tensor& a, real s);
Tensor mul_scalar(const Tensor& a, real s);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, real s) { return add_scalar(a, s); }
inline Tensor operator-(const Tensor& a, real s) { return add_scalar(a, -s); }
inline Tensor operator*(const Tensor& a, real s) { return mul_scalar(a, s); }
inline Tensor operator*(real s, const Tensor& a) { return mul_scalar(a, s); }
inline Tensor operator/(const Tensor& a, real s) { return mul_scalar(a, real(1) / s); }

}  // namespace pelab
