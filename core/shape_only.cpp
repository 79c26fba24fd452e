#include "core/shape_only.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <new>

#include <sys/mman.h>

#include "core/allocator.hpp"
#include "core/eviction_order.hpp"
#include "core/tensor.hpp"

namespace pelab {

namespace {

thread_local bool t_shape_only = false;

// Fake blocks are 4 KiB slots of one reservation (1 GiB of address space, no memory: it fits under an
// address-space cap such as `ulimit -v 3000000`; 262 144 blocks live at once). Blocks larger than
// a slot get slots that are never readable or writable: a block's extent past its slot is never touched
// either, so a slot is enough whatever the size class. Blocks of one slot or less get slots of a writable
// part (pages committed only if written): xtensor writes into small arrays itself (a default-constructed
// Array holds one element, set to 0), and those few bytes may as well land somewhere.
constexpr std::size_t kSlot = 4096, kSlots = std::size_t(1) << 18, kSmallSlots = std::size_t(1) << 16;

// The allocator hook (core/allocator.hpp): hands out fake blocks to threads in shape-only mode and
// records the events of the recording scope. Installed on first use and never removed (a fake block may
// be released after its scope ends); with nothing recording and no fake block live it costs two loads.
class Observer final : public memory::Hook {
 public:
  void* allocate(std::size_t cls, bool index) override {
    if (!t_shape_only) {
      if (recording_.load(std::memory_order_acquire)) record(cls, true, false);
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (index) return lazy_block(cls);
    if (!base_) reserve();
    const bool small = cls <= kSlot;
    Pool& pool = small ? small_ : large_;
    std::size_t slot = 0;
    if (!pool.free.empty()) slot = pool.free.back(), pool.free.pop_back();
    else if (pool.next < pool.end) slot = pool.next++;
    else throw std::bad_alloc();
    pool.free.reserve(pool.next - pool.begin);  // so that deallocate never allocates
    live_.fetch_add(1, std::memory_order_relaxed);
    if (trace_ && fake_trace_) push({cls, true});
    return base_ + slot * kSlot;
  }

  bool deallocate(void* p, std::size_t cls) noexcept override {
    const bool any_fake = live_.load(std::memory_order_relaxed) > 0;
    if (!any_fake && !recording_.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    char* c = static_cast<char*>(p);
    const bool in_slots = base_ && c >= base_ && c < base_ + kSlots * kSlot;
    const bool fake = in_slots || release_lazy(p);
    if (in_slots) {
      const std::size_t slot = std::size_t(c - base_) / kSlot;
      (slot < kSmallSlots ? small_ : large_).free.push_back(slot);  // capacity reserved in allocate
    }
    if (fake) {
      live_.fetch_sub(1, std::memory_order_relaxed);
      if (!facts_.empty()) facts_.erase(p);
    }
    if (trace_ && fake == fake_trace_) push({cls, false});
    return fake;
  }

  bool begin_step() noexcept override {
    if (!t_shape_only && !recording_.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (trace_ && fake_trace_ == t_shape_only) push({0, false, true});
    return t_shape_only;
  }

  void start(memory::Trace* t, bool fake) {
    std::lock_guard<std::mutex> lock(mu_);
    if (trace_) throw Error("memory::TraceScope: another trace is recording (one at a time)");
    trace_ = t, fake_trace_ = fake;
    recording_.store(true, std::memory_order_release);
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    trace_ = nullptr;
    recording_.store(false, std::memory_order_release);
  }
  std::size_t live() const { return live_.load(std::memory_order_relaxed); }
  void note(const void* p, const memory::IndexFacts& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lazy_.count(p)) facts_[p] = f;
  }
  const memory::IndexFacts* facts(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = facts_.find(p);
    return it == facts_.end() ? nullptr : &it->second;  // stable: node-based map, erased only on release
  }

 private:
  void reserve() {
    void* m = mmap(nullptr, kSlots * kSlot, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    if (mprotect(m, kSmallSlots * kSlot, PROT_READ | PROT_WRITE) != 0) {
      munmap(m, kSlots * kSlot);
      throw std::bad_alloc();
    }
    base_ = static_cast<char*>(m);
  }
  // Integer blocks (IndexArray) of a dry run: real memory, mapped without reserving it, so that ids and
  // what is computed from them in O(B T) are real (copies, offsets, bucket ranges) while an O(T^2) table
  // that is never filled (pairwise_index) costs address space only. Caller holds mu_.
  void* lazy_block(std::size_t cls) {
    const std::size_t len = (cls + kSlot - 1) / kSlot * kSlot;
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    try {
      lazy_.emplace(m, len);
    } catch (...) {
      munmap(m, len);
      throw;
    }
    live_.fetch_add(1, std::memory_order_relaxed);
    if (trace_ && fake_trace_) push({cls, true});
    return m;
  }
  bool release_lazy(void* p) noexcept {
    const auto it = lazy_.find(p);
    if (it == lazy_.end()) return false;
    munmap(p, it->second);
    lazy_.erase(it);
    return true;
  }
  void record(std::size_t cls, bool alloc, bool fake) {
    std::lock_guard<std::mutex> lock(mu_);
    if (trace_ && fake == fake_trace_) push({cls, alloc});
  }
  void push(memory::TraceEvent e) noexcept {
    try {
      trace_->events.push_back(e);
    } catch (...) {  // out of memory for the trace itself: the summary will be short, never a crash
    }
  }

  std::mutex mu_;
  char* base_ = nullptr;
  struct Pool {
    std::size_t begin, end, next;
    std::vector<std::size_t> free;
  };
  Pool small_{0, kSmallSlots, 0, {}}, large_{kSmallSlots, kSlots, kSmallSlots, {}};
  std::atomic<std::size_t> live_{0};
  std::atomic<bool> recording_{false};
  memory::Trace* trace_ = nullptr;
  bool fake_trace_ = false;
  std::unordered_map<const void*, memory::IndexFacts> facts_;  // fake block -> what its values would be
  std::unordered_map<const void*, std::size_t> lazy_;            // integer block of a dry run -> mapped bytes
};

Observer& observer() {
  static Observer* o = [] {
    auto* p = new Observer;  // never destroyed: blocks may be released during static destruction
    memory::set_hook(p);
    return p;
  }();
  return *o;
}

}  // namespace

bool shape_only() { return t_shape_only; }

namespace memory {

// Replays the events: live blocks per class, and free lists per class under the allocator's reuse rule
// from a cold start (keeps_freed_block, system_limit, steps and eviction_plan: what allocate / deallocate /
// begin_step in allocator.cpp do, minus the system calls).
TraceSummary Trace::summary() const {
  TraceSummary s;
  std::map<std::size_t, std::size_t> live, cached;
  std::map<std::size_t, std::uint64_t> last;  // class -> step of its latest request
  std::uint64_t step = 0;
  std::size_t live_bytes = 0, cached_bytes = 0, system_bytes = 0, peak_live = 0;
  for (const TraceEvent& e : events) {
    if (e.step) {
      ++step;
      continue;
    }
    std::size_t& n = live[e.cls];
    if (e.alloc) {
      ++s.requests[e.cls];
      s.peak_live[e.cls] = std::max(s.peak_live[e.cls], ++n);
      s.peak_live_bytes = std::max(s.peak_live_bytes, live_bytes += e.cls);
      peak_live = std::max(peak_live, live_bytes);
      last[e.cls] = step;
      std::size_t& c = cached[e.cls];
      if (c) {
        --c, cached_bytes -= e.cls;
        continue;
      }
      const std::size_t limit = system_limit(peak_live);
      std::vector<CachedClass> held;
      for (const auto& [cls, k] : cached)
        if (k > 0) held.push_back({cls, last[cls], k});
      for (const std::size_t cls : eviction_plan(held, step, e.cls, system_bytes, limit))
        --cached[cls], system_bytes -= cls, cached_bytes -= cls;
      s.peak_system_bytes = std::max(s.peak_system_bytes, system_bytes += e.cls);
    } else if (n) {  // a release of a block requested before the trace began is not counted
      --n, live_bytes -= e.cls;
      if (keeps_freed_block(cached_bytes, e.cls)) ++cached[e.cls], cached_bytes += e.cls;
      else system_bytes -= e.cls;
    }
  }
  return s;
}

TraceScope::TraceScope(bool fake_blocks) { observer().start(&trace_, fake_blocks); }
TraceScope::~TraceScope() { observer().stop(); }

std::size_t fake_blocks_live() { return observer().live(); }

void note_index_facts(const void* fake_block, const IndexFacts& facts) { observer().note(fake_block, facts); }
const IndexFacts* index_facts(const void* fake_block) { return observer().facts(fake_block); }

}  // namespace memory

ShapeOnly::ShapeOnly() : prev_(t_shape_only), trace_(true) { t_shape_only = true; }
ShapeOnly::~ShapeOnly() { t_shape_only = prev_; }

}  // namespace pelab
