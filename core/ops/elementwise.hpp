// Binary elementwise ops with NumPy broadcasting; backward reduces over broadcast axes.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

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
