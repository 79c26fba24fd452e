// What a forward pass allocates, from shapes alone: each module describes the buffers its forward (and,
// when training, its backward) takes from the caching allocator (core/allocator.hpp), beside its
// forward, so that a memory estimate is arithmetic over the model's own description
// (experiments/run/resources.cpp) and nothing has to be built or run to refuse a config that cannot fit.
//
// Buffers are counted by size class, as the allocator reserves them (a freed block goes back only to a
// later request of the same class), and by how long they live:
//   held      through the whole forward pass, and when training until backward frees it: what a tape
//             node saves (a Linear's input, attention's probabilities), tables an encoding keeps
//   scratch   freed before the next layer runs, which gets the same blocks back
//   backward  gradients of activations and backward's work buffers, live at once in one layer's backward
// The peak is the sum over size classes of the class's bytes times held + max(scratch, backward):
// scratch blocks left in a class's free list serve that class's gradients later.
// Integer tables (IndexArray: ids, T5's buckets, Shaw's index) bypass the allocator: see `untracked`.
#pragma once

#include <cstddef>
#include <map>

namespace pelab {

struct ForwardCost {
  std::map<std::size_t, double> held, scratch, backward;  // size class (bytes) -> buffers
  double untracked = 0;  // bytes outside the caching allocator (integer index tables)

  // `count` buffers of `numel` reals each.
  ForwardCost& hold(double numel, double count = 1);
  ForwardCost& add_scratch(double numel, double count = 1);
  ForwardCost& add_backward(double numel, double count = 1);
  // hold() when training (a saved tensor), add_scratch() otherwise.
  ForwardCost& saved(bool training, double numel, double count = 1);

  // `next` runs after this: held buffers add up, scratch and backward blocks are reused.
  ForwardCost& then(const ForwardCost& next);
  // n layers like this one, one after the other.
  ForwardCost repeated(std::size_t n) const;
  // The peak bytes obtained from the allocator (see above), untracked bytes not included.
  double bytes() const;
};

// The bytes the caching allocator reserves for `numel` reals (core/allocator.hpp size_class).
std::size_t reserved_bytes(double numel);

}  // namespace pelab
