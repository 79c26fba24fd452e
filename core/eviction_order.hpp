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

// Size classes of 2 MiB and more (the allocator's own mappings, on huge pages): a miss of such a class
// first gives back one cached block of such a class, the first in eviction_order, whatever the limit; its
// pages then serve the miss (allocator.cpp, recycle) instead of fresh ones the kernel must zero. Mixed
// lengths ask for new classes of these every step (config (d): P (B, H, T, T) alone is 6-26 MB a layer),
// and zeroing their pages was 5-6% of a (d) step (bench/README.md, "Profiles of (d) and zhou2024").
constexpr std::size_t kRecycledClass = std::size_t(2) << 20;
inline bool recycled_class(std::size_t cls) { return cls >= kRecycledClass; }
// The class whose block a miss of `cls` gives back first (recycled_class), 0 for none; `order` is
// eviction_order's.
inline std::size_t recycled_for(std::size_t cls, const std::vector<std::size_t>& order) {
  if (recycled_class(cls))
    for (const std::size_t k : order)
      if (recycled_class(k)) return k;
  return 0;
}

}  // namespace pelab::memory
