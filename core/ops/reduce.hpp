// Reductions: sum, mean and max over axes. Negative axes count from the end; duplicate or
// out-of-range axes throw Error naming the op. The result drops the reduced axes, or keeps them with
// size 1 when keepdims is true.
// Kept as ops (docs/architecture.md, the op set): the primitive reductions (mean is sum's kernel, divided).
#pragma once

#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// Sum of all elements, shape ().
Tensor sum(const Tensor& x);
// Sum over `axes`. An empty list reduces nothing (NumPy's axis=(), not PyTorch's dim=[]): a copy.
// Summing over an empty axis gives 0.
Tensor sum(const Tensor& x, std::vector<int> axes, bool keepdims = false);

// Mean of all elements, shape (). Over an empty tensor it is nan (0/0), as in PyTorch.
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdims = false);

// Maximum along one axis. The gradient flows to the first maximal element only (ties: lowest
// index). NaN counts as larger than any number, so a nan in the slice is the result (PyTorch).
// The axis must not be empty.
Tensor max(const Tensor& x, int axis, bool keepdims = false);

}  // namespace pelab
