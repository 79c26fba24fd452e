// Unary elementwise ops (any shape, output has the input's shape).
//
// Domain errors follow IEEE like PyTorch, they do not throw: log(0) = -inf, log(x < 0) = nan,
// log1p(-1) = -inf, log1p(x < -1) = nan, sqrt(x < 0) = nan (and their gradients are then inf/nan too).
// Kept as ops (docs/architecture.md, the op set): each its own derivative in one pass (log1p, sigmoid,
// softplus also keep precision; relu, abs, clamp PyTorch's kink gradients); neg is a composite.
#pragma once

#include "core/tensor.hpp"

namespace pelab {

Tensor neg(const Tensor& x);  // a composite: mul_scalar(x, -1), the same bits
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);   // natural log
// log(1 + x) without rounding 1 + x first (std::log1p): accurate for small |x|; gradient 1 / (1 + x).
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
// sin and cos in radians (std::sin, std::cos); gradients cos(x) and -sin(x), from the saved input.
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor sigmoid(const Tensor& x);  // 1 / (1 + e^-x), evaluated without overflow for large |x|
Tensor relu(const Tensor& x);     // max(x, 0); gradient 0 at x = 0 (PyTorch's choice)
// Exact GELU (PyTorch's default): 0.5 x (1 + erf(x / sqrt 2)).
Tensor gelu(const Tensor& x);
// Tanh-approximated GELU (PyTorch approximate='tanh'): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu_tanh(const Tensor& x);
Tensor square(const Tensor& x);   // x^2
// |x|; gradient sign(x), 0 at x = 0 (and at nan), as PyTorch.
Tensor abs(const Tensor& x);
// min(max(x, lo), hi), PyTorch's clamp: gradient 1 where lo <= x <= hi (the bounds included), 0
// outside and at nan. lo or hi may be infinite (one-sided); lo > hi or a nan bound throws Error.
Tensor clamp(const Tensor& x, real lo, real hi);
// PyTorch's softplus: log(1 + e^(beta x)) / beta, and x itself where beta x > threshold; gradient
// sigmoid(beta x) (1 past the threshold). beta must be nonzero.
Tensor softplus(const Tensor& x, real beta = 1, real threshold = 20);

inline Tensor operator-(const Tensor& x) { return neg(x); }

}  // namespace pelab
