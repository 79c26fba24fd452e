// The order in which the caching allocator's reuse rule (core/allocator.hpp) gives cached blocks back on a
// miss past system_limit: size classes not requested in the current step only, the one requested longest
// ago first, then the largest. allocator.cpp (evict_for) and its replay (Trace::summary, core/shape_only.cpp)
// both take it from here, so the estimate cannot drift from the allocator. A header of its own so that
// changing the rule recompiles those two files, not everything that includes allocator.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pelab::memory {

struct CachedClass {
  std::size_t cls = 0;         // size class (bytes) with blocks cached
  std::uint64_t last_step = 0; // the step of its latest request
  std::size_t blocks = 0;      // how many are cached
};

// The classes of `cached` that may go back at step `step`, in the order they go.
std::vector<std::size_t> eviction_order(std::vector<CachedClass> cached, std::uint64_t step);

// The whole rule for a miss of `cls` at step `step` with `system_bytes` held: the blocks it gives back, one
// entry (its class) per block, in the order they go: recycled_for's picks (below) whatever the limit, then
// eviction_order's classes while system_bytes + cls would exceed `limit`.
std::vector<std::size_t> eviction_plan(const std::vector<CachedClass>& cached, std::uint64_t step, std::size_t cls,
                                       std::size_t system_bytes, std::size_t limit);

// Size classes of 2 MiB and more (the allocator's own mappings, on huge pages): a miss of such a class
// first gives back cached blocks of such classes not current (recycled_for), whatever the limit; their
// pages then serve the miss (allocator.cpp, recycle) instead of fresh ones the kernel must zero. Mixed lengths ask for new
// classes of these every step (config (d): P (B, H, T, T) alone is 1-26 MB a layer), and zeroing their
// pages was 5-6% of a (d) step (bench/README.md, "Profiles of (d) and zhou2024").
constexpr std::size_t kRecycledClass = std::size_t(2) << 20;
inline bool recycled_class(std::size_t cls) { return cls >= kRecycledClass; }
// The blocks a miss of `cls` gives back first, by class, whatever the limit: of `avail` (one entry per
// cached block of a class not current, any order), the smallest at least as large as what the request
// still lacks, else the largest, again until the request is covered or none is left. So its pages are
// recycled ones (a block that is too long is cut; shorter ones are laid end to end) and few are given
// back unused. Empty for a smaller class.
inline std::vector<std::size_t> recycled_for(std::size_t cls, std::vector<std::size_t> avail) {
  std::vector<std::size_t> picks;
  if (!recycled_class(cls)) return picks;
  avail.erase(std::remove_if(avail.begin(), avail.end(), [](std::size_t k) { return !recycled_class(k); }), avail.end());
  std::sort(avail.begin(), avail.end());
  for (std::size_t lacking = cls; lacking > 0 && !avail.empty();) {
    const auto fit = std::lower_bound(avail.begin(), avail.end(), lacking);
    const auto pick = fit != avail.end() ? fit : avail.end() - 1;
    picks.push_back(*pick);
    lacking -= std::min(lacking, *pick);
    avail.erase(pick);
  }
  return picks;
}

}  // namespace pelab::memory
