// The order in which the caching allocator's reuse rule (core/allocator.hpp) gives cached blocks back on a
// miss past system_limit: size classes not requested in the current step only, the one requested longest
// ago first, then the largest. allocator.cpp (evict_for) and its replay (Trace::summary, core/shape_only.cpp)
// both take it from here, so the estimate cannot drift from the allocator. A header of its own so that
// changing the rule recompiles those two files, not everything that includes allocator.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pelab::memory {

struct CachedClass {
  std::size_t cls = 0;         // size class (bytes) with blocks cached
  std::uint64_t last_step = 0; // the step of its latest request
};

// The classes of `cached` that may go back at step `step`, in the order they go.
std::vector<std::size_t> eviction_order(std::vector<CachedClass> cached, std::uint64_t step);

}  // namespace pelab::memory
