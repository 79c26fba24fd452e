// Tensor storage comes from a caching allocator: a freed block goes to a free list for its size
// class and is handed to the next request of that class. A training step requests the same sizes
// every time, so after the first steps nothing more is asked of the system (stats() shows it), and
// fresh buffers cost no page faults (glibc returns large blocks to the kernel on free, and touching
// them again page-faults: 4x slower matmul steps, measured in bench_core). Blocks of 2 MiB and more
// are mapped 2 MiB aligned and advised to use transparent huge pages (fewer TLB misses; allocator.cpp).
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>

namespace pelab::memory {

// 64-byte aligned; throws std::bad_alloc. `index`: an integer block (IndexArray: ids and the tables made
// from them), which a shape-only run backs with real, lazily committed memory (core/shape_only.hpp).
void* allocate(std::size_t bytes, bool index = false);
void deallocate(void* p, std::size_t bytes) noexcept;

struct Stats {
  std::size_t system_allocs = 0;  // blocks obtained from the system so far (monotonic)
  std::size_t system_bytes = 0;   // bytes obtained from the system and not released
  std::size_t cache_hits = 0;     // requests served from the free lists
  std::size_t cached_bytes = 0;   // bytes sitting in the free lists now
  std::size_t peak_live_bytes = 0;    // the most bytes in use at once (system_bytes - cached_bytes)
  std::size_t peak_system_bytes = 0;  // the most bytes held from the system at once
  std::size_t evicted_bytes = 0;    // cached bytes given back to the system to stay under system_limit (monotonic)
};
Stats stats();
// Gives every cached block back to the system; the peaks restart from what is live (a new phase).
void release_cache();

// Whether blocks whose size class is 2 MiB or more are 2 MiB aligned mappings advised to use transparent
// huge pages (Linux, not under AddressSanitizer); otherwise they come from aligned_alloc like the rest.
bool huge_blocks();

// The byte size actually reserved for a request (size classes: at most 1/8 or 64 bytes larger than
// asked, always a multiple of 64).
std::size_t size_class(std::size_t bytes);

// The reuse rule, which the shape-only estimate (core/shape_only.hpp) replays exactly:
// - keeps_freed_block: whether a freed block of class `cls` goes to its free list when `cached_bytes` sit
//   in the free lists already (otherwise it goes back to the system);
// - steps: begin_step() starts a step (Transformer::forward calls it: one forward, and its backward, is a
//   step); a size class is *current* once requested in the current step;
// - a request that no free list serves first gives cached blocks back to the system while the bytes held
//   from the system would exceed system_limit(the most bytes ever live at once, this request included):
//   blocks of classes not current only, the class requested longest ago (by step) first, then the largest;
//   and a request of a class of 2 MiB or more first gives back one block of such a class not current (the
//   best fit: recycled_for, core/eviction_order.hpp) whatever the limit, whose pages serve it: fresh pages
//   would have to be zeroed by the kernel, a new class's every step under mixed lengths.
// So what a run of mixed lengths holds stays near 1.25x its largest step (issue #41 item 4: the other
// lengths' classes go), while a steady loop never gives back a block it will ask for again in the same
// step: what thrashed under "largest class first" (a loop whose classes' peaks add up to more than 1.25x
// its live peak gave back and re-obtained blocks every step). Without begin_step every class is current:
// nothing is evicted (blocks are bounded by keeps_freed_block only), as for the GRU/LSTM loop of
// tests/core_f32/test_recurrent_f32.cpp.
void begin_step();
bool keeps_freed_block(std::size_t cached_bytes, std::size_t cls);
std::size_t system_limit(std::size_t peak_live_bytes);

// An observer of every request (any thread), for traces and the shape-only mode (core/shape_only.hpp).
// allocate(cls, index) may answer with a block of its own (then neither the free lists nor the system
// are touched) or nullptr; deallocate(p, cls) returns true when p was such a block.
struct Hook {
  virtual void* allocate(std::size_t cls, bool index) = 0;
  virtual bool deallocate(void* p, std::size_t cls) noexcept = 0;
  // begin_step(): true when the hook took it (a shape-only thread: the live allocator's steps go on).
  virtual bool begin_step() noexcept { return false; }

 protected:
  ~Hook() = default;
};
void set_hook(Hook* hook);  // nullptr: none; the hook must outlive every block it handed out

template <class T>
struct CachingAllocator {
  using value_type = T;
  CachingAllocator() noexcept = default;
  template <class U>
  CachingAllocator(const CachingAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(memory::allocate(n * sizeof(T), std::is_integral<T>::value)); }
  void deallocate(T* p, std::size_t n) noexcept { memory::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const CachingAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const CachingAllocator<U>&) const noexcept { return false; }
};

}  // namespace pelab::memory
