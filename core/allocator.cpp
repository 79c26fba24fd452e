#include "core/allocator.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace pelab::memory {

namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kMaxCached = std::size_t(1) << 31;  // beyond 2 GiB cached, free to the system

struct Cache {
  std::mutex mu;
  std::unordered_map<std::size_t, std::vector<void*>> free;  // size class -> blocks
  Stats st;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors in static storage may be freed after main
  return *c;
}

}  // namespace

std::size_t size_class(std::size_t bytes) {
  if (bytes <= 256) return (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0);
  // 8 classes per power of two: round up to a multiple of 2^(floor(log2 bytes) - 3), and of 64:
  // aligned_alloc requires the size to be a multiple of the alignment (ASan aborts otherwise).
  std::size_t top = 1;
  while ((top << 1) <= bytes) top <<= 1;
  const std::size_t step = std::max(top / 8, kAlign);
  return (bytes + step - 1) / step * step;
}

void* allocate(std::size_t bytes) {
  const std::size_t cls = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.free.find(cls);
    if (it != c.free.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++c.st.cache_hits;
      c.st.cached_bytes -= cls;
      return p;
    }
  }
  // aligned_alloc needs a size that is a multiple of the alignment (C11; ASan enforces it), and the
  // classes between 256 and 512 bytes are multiples of 32 only.
  const std::size_t sys_bytes = (cls + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, sys_bytes);
  if (!p) {
    release_cache();
    p = std::aligned_alloc(kAlign, sys_bytes);
    if (!p) throw std::bad_alloc();
  }
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.st.system_allocs;
  c.st.system_bytes += cls;
  return p;
}

void deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  const std::size_t cls = size_class(bytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.st.cached_bytes + cls > kMaxCached) {
    std::free(p);
    c.st.system_bytes -= cls;
    return;
  }
  try {
    c.free[cls].push_back(p);
    c.st.cached_bytes += cls;
  } catch (...) {  // could not grow the free list: give the block back instead
    std::free(p);
    c.st.system_bytes -= cls;
  }
}

Stats stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.st;
}

void release_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [cls, blocks] : c.free) {
    for (void* p : blocks) std::free(p);
    c.st.system_bytes -= cls * blocks.size();
    blocks.clear();
  }
  c.st.cached_bytes = 0;
}

}  // namespace pelab::memory
