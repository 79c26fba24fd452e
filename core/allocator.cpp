#include "core/allocator.hpp"
#include "core/eviction_order.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <map>
#include <vector>

// Huge-page mappings on Linux, except under AddressSanitizer: mmap'd blocks are invisible to it (no
// redzones, no leak report), and the sanitized build is there to see overflows.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PELAB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PELAB_ASAN 1
#endif
#if defined(__linux__) && !defined(PELAB_ASAN)
#define PELAB_HUGE_BLOCKS 1
#include <sys/mman.h>
#endif

namespace pelab::memory {

namespace {

constexpr std::size_t kAlign = 64;
// Blocks whose size class is at least 2 MiB get their own mapping, aligned to 2 MiB, marked
// MADV_HUGEPAGE (Linux transparent huge pages; Documentation/admin-guide/mm/transhuge.rst): a training
// step walks tens of MB of activations, and with 4 KiB pages its GEMMs and row loops miss the TLB.
// bench_train --config b: 63.0-63.4 -> 58.9-61.2 ms per step (bench/README.md, "Huge pages"). Where THP
// is off the advice is ignored and the block is an ordinary mapping.
constexpr std::size_t kHuge = kRecycledClass;  // 2 MiB (eviction_order.hpp)
constexpr std::size_t kPage = 4096;  // mmap and munmap work in these (x86-64, aarch64 4K kernels)
constexpr std::size_t kMaxCached = std::size_t(1) << 31;  // beyond 2 GiB cached, free to the system

struct FreeList {
  std::vector<void*> blocks;
  std::uint64_t last_step = 0;  // the step of the class's latest request (begin_step)
};

struct Cache {
  std::mutex mu;
  std::map<std::size_t, FreeList> free;  // size class -> its cached blocks
  std::uint64_t step = 0;                // begin_step() calls so far
  Stats st;
};

std::atomic<Hook*> g_hook{nullptr};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors in static storage may be freed after main
  return *c;
}

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// The system's side: aligned_alloc, or for huge blocks on Linux a 2 MiB aligned mapping.
// `cls` is a size class (a multiple of 64); system_free must get the same one.
void* system_alloc(std::size_t cls) {
#ifdef PELAB_HUGE_BLOCKS
  if (cls >= kHuge) {
    const std::size_t len = round_up(cls, kPage), span = len + kHuge;
    void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    char* base = static_cast<char*>(m);
    char* p = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(base), kHuge));
    if (p > base) munmap(base, std::size_t(p - base));  // the unaligned head and the unused tail
    if (base + span > p + len) munmap(p + len, std::size_t(base + span - (p + len)));
    // The whole block, one mapping: the kernel puts huge pages on its whole 2 MiB ranges only.
    madvise(p, len, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
    return p;
  }
#endif
  return std::aligned_alloc(kAlign, round_up(cls, kAlign));  // C11: a multiple of the alignment
}

void system_free(void* p, std::size_t cls) noexcept {
#ifdef PELAB_HUGE_BLOCKS
  if (cls >= kHuge) {
    munmap(p, round_up(cls, kPage));
    return;
  }
#endif
  std::free(p);
}

// A huge block evict_for took back for the request that made it evict: its pages serve that request
// (recycle) instead of being unmapped while the request maps as many fresh ones, which the kernel zeroes
// (clear_page_erms: 5-6% of a config (d) step, whose mixed lengths evict and obtain huge blocks every
// step; bench/README.md, "Profiles of (d) and zhou2024"). The accounting is the reuse rule's either way
// (the evicted bytes went back, the request's bytes came from the system): only the zeroing is saved.
struct Evicted {
  void* p = nullptr;  // null once recycled or freed
  std::size_t cls = 0;
};

#ifdef PELAB_HUGE_BLOCKS
// A mapping of round_up(cls, kPage) bytes, 2 MiB aligned, for `cls` (>= kHuge), made of evicted blocks'
// pages where they serve: the smallest at least as long, cut to length in place; else the blocks laid end
// to end (mremap) on a fresh mapping, the last one cut, whose rest alone is new pages. Null when none was
// evicted. Contents are whatever the pages held (as for any cached block).
void* recycle(std::size_t cls, std::vector<Evicted>& evicted) {
  const std::size_t len = round_up(cls, kPage);
  Evicted* fit = nullptr;
  for (Evicted& e : evicted)
    if (e.p && round_up(e.cls, kPage) >= len && (!fit || e.cls < fit->cls)) fit = &e;
  if (fit) {
    const std::size_t elen = round_up(fit->cls, kPage);
    if (elen > len) munmap(static_cast<char*>(fit->p) + len, elen - len);  // the tail; the head stays put
    void* p = fit->p;
    fit->p = nullptr;
    return p;
  }
  if (evicted.empty()) return nullptr;
  char* q = static_cast<char*>(system_alloc(cls));  // aligned and advised; parts replaced by the old pages
  if (!q) return nullptr;
  std::size_t at = 0;
  for (Evicted& e : evicted) {
    if (!e.p || at >= len) continue;
    const std::size_t elen = round_up(e.cls, kPage), take = std::min(elen, len - at);
    if (take < elen) munmap(static_cast<char*>(e.p) + take, elen - take);
    // On failure that part of q stays fresh pages, and what is left of the block goes.
    if (mremap(e.p, take, take, MREMAP_MAYMOVE | MREMAP_FIXED, q + at) == MAP_FAILED) munmap(e.p, take);
    else at += take;
    e.p = nullptr;
  }
  return q;
}
#endif

// system_alloc(cls), recycling the huge blocks evict_for took back where they serve; the rest are freed.
void* obtain(std::size_t cls, std::vector<Evicted>& evicted) {
  void* p = nullptr;
#ifdef PELAB_HUGE_BLOCKS
  if (cls >= kHuge) p = recycle(cls, evicted);
#endif
  for (Evicted& e : evicted)
    if (e.p) system_free(e.p, e.cls);
  return p ? p : system_alloc(cls);
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

void set_hook(Hook* hook) { g_hook.store(hook, std::memory_order_release); }

std::vector<std::size_t> eviction_order(std::vector<CachedClass> cached, std::uint64_t step) {
  cached.erase(std::remove_if(cached.begin(), cached.end(), [step](const CachedClass& c) { return c.last_step >= step; }),
               cached.end());
  std::sort(cached.begin(), cached.end(), [](const CachedClass& a, const CachedClass& b) {
    return a.last_step != b.last_step ? a.last_step < b.last_step : a.cls > b.cls;
  });
  std::vector<std::size_t> order;
  for (const CachedClass& c : cached) order.push_back(c.cls);
  return order;
}

std::vector<std::size_t> eviction_plan(const std::vector<CachedClass>& cached, std::uint64_t step, std::size_t cls,
                                       std::size_t system_bytes, std::size_t limit) {
  std::map<std::size_t, std::size_t> left;  // blocks per class not yet in the plan
  for (const CachedClass& c : cached) left[c.cls] = c.blocks;
  const std::vector<std::size_t> order = eviction_order(cached, step);
  std::vector<std::size_t> avail;  // one entry per cached block of a class not current
  for (const std::size_t k : order)
    if (recycled_class(k)) avail.insert(avail.end(), left[k], k);
  std::vector<std::size_t> plan = recycled_for(cls, std::move(avail));
  for (const std::size_t k : plan) --left[k], system_bytes -= k;
  for (const std::size_t k : order)
    for (; left[k] > 0 && system_bytes + cls > limit; --left[k], system_bytes -= k) plan.push_back(k);
  return plan;
}

void begin_step() {
  if (Hook* h = g_hook.load(std::memory_order_acquire))
    if (h->begin_step()) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.step;
}

bool keeps_freed_block(std::size_t cached_bytes, std::size_t cls) { return cached_bytes + cls <= kMaxCached; }

std::size_t system_limit(std::size_t peak_live_bytes) { return peak_live_bytes + peak_live_bytes / 4; }

namespace {

// Before `cls` more bytes are obtained from the system: cached blocks back to the system while the bytes
// held would exceed system_limit, as eviction_plan says (the reuse rule: allocator.hpp; Trace::summary
// replays the same plan). Caller holds c.mu. Huge blocks go to `huge` (still counted as given back) for obtain to recycle.
void evict_for(Cache& c, std::size_t cls, std::vector<Evicted>& huge) {
  Stats& st = c.st;
  st.peak_live_bytes = std::max(st.peak_live_bytes, st.system_bytes - st.cached_bytes + cls);
  const std::size_t limit = system_limit(st.peak_live_bytes);
  std::vector<CachedClass> cached;
  for (const auto& [k, list] : c.free)
    if (!list.blocks.empty()) cached.push_back({k, list.last_step, list.blocks.size()});
  for (const std::size_t k : eviction_plan(cached, c.step, cls, st.system_bytes, limit)) {
    std::vector<void*>& blocks = c.free[k].blocks;
    if (k >= kHuge && huge_blocks())
      huge.push_back({blocks.back(), k});
    else
      system_free(blocks.back(), k);
    blocks.pop_back();
    st.system_bytes -= k, st.cached_bytes -= k, st.evicted_bytes += k;
  }
}

}  // namespace

void* allocate(std::size_t bytes, bool index) {
  const std::size_t cls = size_class(bytes);
  if (Hook* h = g_hook.load(std::memory_order_acquire))
    if (void* p = h->allocate(cls, index)) return p;
  Cache& c = cache();
  std::vector<Evicted> evicted;  // huge blocks given back by this miss (obtain recycles them)
  {
    std::lock_guard<std::mutex> lock(c.mu);
    FreeList& list = c.free[cls];
    list.last_step = c.step;
    if (!list.blocks.empty()) {
      void* p = list.blocks.back();
      list.blocks.pop_back();
      ++c.st.cache_hits;
      c.st.cached_bytes -= cls;
      c.st.peak_live_bytes = std::max(c.st.peak_live_bytes, c.st.system_bytes - c.st.cached_bytes);
      return p;
    }
    evict_for(c, cls, evicted);
  }
  void* p = obtain(cls, evicted);
  if (!p) {
    release_cache();
    p = system_alloc(cls);
    if (!p) throw std::bad_alloc();
  }
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.st.system_allocs;
  c.st.system_bytes += cls;
  c.st.peak_system_bytes = std::max(c.st.peak_system_bytes, c.st.system_bytes);
  return p;
}

void deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  const std::size_t cls = size_class(bytes);
  if (Hook* h = g_hook.load(std::memory_order_acquire))
    if (h->deallocate(p, cls)) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!keeps_freed_block(c.st.cached_bytes, cls)) {
    system_free(p, cls);
    c.st.system_bytes -= cls;
    return;
  }
  try {
    c.free[cls].blocks.push_back(p);
    c.st.cached_bytes += cls;
  } catch (...) {  // could not grow the free list: give the block back instead
    system_free(p, cls);
    c.st.system_bytes -= cls;
  }
}

bool huge_blocks() {
#ifdef PELAB_HUGE_BLOCKS
  return true;
#else
  return false;
#endif
}

Stats stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.st;
}

void release_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [cls, list] : c.free) {
    for (void* p : list.blocks) system_free(p, cls);
    c.st.system_bytes -= cls * list.blocks.size();
    list.blocks.clear();
  }
  c.st.cached_bytes = 0;
  c.st.peak_live_bytes = c.st.peak_system_bytes = c.st.system_bytes;  // a new phase: the peaks from here on
}

}  // namespace pelab::memory
