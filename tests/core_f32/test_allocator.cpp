// The caching allocator: blocks are reused by size class, and a repeated workload stops asking the system.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/allocator.hpp"
#include "core/eviction_order.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/unary.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"

using namespace pelab;

TEST_CASE("size classes are at most 1/8 larger than the request", "[allocator]") {
  for (std::size_t b : {1ul, 63ul, 64ul, 300ul, 1000ul, 4096ul, 5000ul, 123457ul, 1ul << 24}) {
    const std::size_t c = memory::size_class(b);
    INFO(b);
    CHECK(c >= b);
    CHECK(c <= b + std::max<std::size_t>(64, b / 8));
  }
}

TEST_CASE("size classes are multiples of the 64-byte alignment (aligned_alloc's contract)", "[allocator]") {
  for (std::size_t b = 0; b < 70000; ++b) {
    const std::size_t c = memory::size_class(b);
    if (c % 64 != 0) {
      INFO("request " << b << " bytes -> class " << c);
      CHECK(c % 64 == 0);
      break;
    }
  }
  CHECK(memory::size_class(257) % 64 == 0);
}

TEST_CASE("a freed block is handed to the next request of its class", "[allocator]") {
  void* p = memory::allocate(100000);
  memory::deallocate(p, 100000);
  const auto before = memory::stats();
  void* q = memory::allocate(100000);
  const auto after = memory::stats();
  CHECK(q == p);
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.cache_hits == before.cache_hits + 1);
  memory::deallocate(q, 100000);
}

TEST_CASE("a repeated forward and backward stops allocating from the system", "[allocator]") {
  Tensor x = Tensor::full({64, 32}, 0.5f, true), w = Tensor::full({48, 32}, 0.1f, true);
  auto step = [&] {
    Tensor y = gelu(linear(x, w));
    y.backward(Array(xt::ones<real>(y.shape())));
    x.zero_grad();
    w.zero_grad();
  };
  for (int i = 0; i < 3; ++i) step();  // warm up
  const auto before = memory::stats();
  for (int i = 0; i < 20; ++i) step();
  const auto after = memory::stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.cache_hits > before.cache_hits);
}

namespace {
constexpr std::size_t kMiB = std::size_t(1) << 20;
// One step of the loop below: blocks of 4, 5 and 6 MiB (times `scale`), each freed before the next is
// asked for. One block is live at a time, but the three classes' blocks add up to 15 MiB, past 1.25x the
// 6 MiB live peak.
void three_classes_step(std::size_t scale = 1) {
  memory::begin_step();
  for (std::size_t mib : {4, 5, 6}) memory::deallocate(memory::allocate(mib * scale * kMiB), mib * scale * kMiB);
}
}  // namespace

// The reuse rule (core/allocator.hpp): the rule it replaced evicted the largest cached class at every
// miss past 1.25x the live peak, so this loop gave back and re-obtained a block every step.
TEST_CASE("a steady loop never gives back a block it asks for again in the same step", "[allocator]") {
  memory::release_cache();
  for (int i = 0; i < 2; ++i) three_classes_step();  // warm up
  const auto before = memory::stats();
  for (int i = 0; i < 10; ++i) three_classes_step();
  const auto after = memory::stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.evicted_bytes == before.evicted_bytes);
  CHECK(after.cache_hits == before.cache_hits + 30);
}

TEST_CASE("a miss gives back the classes of earlier steps first, oldest first, and the trace replays it",
          "[allocator]") {
  memory::release_cache();
  // Blocks live outside this test raise the limit by 1.25x their bytes; at 10x the sizes they change
  // nothing below while they stay under 18 MiB.
  const std::size_t base = memory::stats().system_bytes, S = 10;
  REQUIRE(base < 18 * kMiB);
  const std::size_t evicted = memory::stats().evicted_bytes;
  memory::Trace trace;
  {
    memory::TraceScope scope;
    three_classes_step(S);  // 40, 50, 60 MiB cached: 150 MiB held for a 60 MiB live peak
    memory::begin_step();
    // A new class (70 MiB): the limit is 1.25 x 70 = 87.5 MiB, so 60, 50 and 40 go back (an earlier step's).
    memory::deallocate(memory::allocate(7 * S * kMiB), 7 * S * kMiB);
    trace = scope.trace();
  }
  const auto st = memory::stats();
  const auto cls = [&](std::size_t mib) { return memory::size_class(mib * S * kMiB); };  // 40, 52, 60, 72 MiB
  CHECK(st.evicted_bytes - evicted == cls(4) + cls(5) + cls(6));
  CHECK(st.system_bytes - base == cls(7));  // the 70 MiB block, cached
  // Trace::summary replays the same rule from a cold start: the same peak of bytes held.
  CHECK(trace.summary().peak_system_bytes == st.peak_system_bytes - base);
  memory::release_cache();
}

#ifdef __linux__
// The VmFlags line of the mapping that holds p in /proc/self/smaps ("hg": MADV_HUGEPAGE was given);
// "" when there is no such line (kernels or sandboxes without it).
static std::string vm_flags_of(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) inside = a >= lo && a < hi;  // a mapping's first line
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// Whether some mapping of /proc/self/maps contains p.
static bool mapped(const void* p) {
  std::ifstream f("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && a >= lo && a < hi) return true;
  }
  return false;
}

TEST_CASE("blocks of 2 MiB and more are 2 MiB aligned and advised to use huge pages", "[allocator]") {
  if (!memory::huge_blocks()) {
    WARN("skipped: this build takes large blocks from aligned_alloc (not Linux, or AddressSanitizer)");
    return;
  }
  memory::release_cache();
  const auto before = memory::stats();
  const std::size_t bytes = (std::size_t(5) << 20) + 12345;  // not a multiple of 2 MiB
  auto* p = static_cast<unsigned char*>(memory::allocate(bytes));
  CHECK(reinterpret_cast<std::uintptr_t>(p) % (std::size_t(2) << 20) == 0);
  std::memset(p, 7, bytes);  // the whole block is writable, tail included
  CHECK(p[bytes - 1] == 7);
  // Kernels built without transparent huge pages refuse the advice; then there is nothing to see.
  const std::string flags = vm_flags_of(p);
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good() && !flags.empty()) {
    INFO(flags);
    CHECK(flags.find(" hg") != std::string::npos);
  }
  memory::deallocate(p, bytes);
  void* q = memory::allocate(bytes);  // cached and handed back, as smaller blocks
  CHECK(q == p);
  memory::deallocate(q, bytes);
  memory::release_cache();  // unmapped, and the accounting back where it was
  CHECK_FALSE(mapped(p));
  CHECK(memory::stats().system_bytes == before.system_bytes);
}

TEST_CASE("a block just under 2 MiB stays an ordinary 64-byte aligned allocation", "[allocator]") {
  const std::size_t bytes = (std::size_t(2) << 20) - (std::size_t(128) << 10) - 100;  // class 1.875 MiB
  REQUIRE(memory::size_class(bytes) < (std::size_t(2) << 20));
  void* p = memory::allocate(bytes);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  CHECK(vm_flags_of(p).find(" hg") == std::string::npos);  // not advised: not its own huge-page mapping
  memory::deallocate(p, bytes);
}
#endif

#ifdef __linux__
// A huge block of class `mib` MiB filled with `byte`, cached (freed) in the current step.
static unsigned char* cached_huge(std::size_t mib, unsigned char byte) {
  auto* p = static_cast<unsigned char*>(memory::allocate(mib * kMiB));
  std::memset(p, byte, mib * kMiB);
  memory::deallocate(p, mib * kMiB);
  return p;
}

TEST_CASE("a miss that evicts a huge block gets that block's pages, shorter or longer, with the rule's accounting",
          "[allocator]") {
  if (!memory::huge_blocks()) {
    WARN("skipped: this build takes large blocks from aligned_alloc (not Linux, or AddressSanitizer)");
    return;
  }
  for (const std::size_t want : {std::size_t(5), std::size_t(8)}) {  // cut to length; moved onto a longer mapping
    INFO("6 MiB evicted for a " << want << " MiB request");
    memory::release_cache();
    REQUIRE(memory::stats().system_bytes < 4 * kMiB);  // so that the 6 MiB block is what goes back
    unsigned char* old = cached_huge(6, 0xA5);
    const auto before = memory::stats();
    memory::begin_step();  // the 6 MiB class is an earlier step's: it may go back
    auto* p = static_cast<unsigned char*>(memory::allocate(want * kMiB));
    const auto after = memory::stats();
    CHECK(after.evicted_bytes - before.evicted_bytes == 6 * kMiB);
    CHECK(after.system_allocs == before.system_allocs + 1);
    CHECK(after.system_bytes == before.system_bytes - 6 * kMiB + want * kMiB);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % (std::size_t(2) << 20) == 0);
    if (want < 6) CHECK(p == old);
    // The old pages, not fresh zeroed ones (fresh pages read 0): the first 5 MiB hold its bytes.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < 5 * kMiB; i += 4096) kept += p[i] == 0xA5;
    CHECK(kept == 5 * kMiB / 4096);
    std::memset(p, 1, want * kMiB);  // every byte of the request is writable
    CHECK(p[want * kMiB - 1] == 1);
    memory::deallocate(p, want * kMiB);
    memory::release_cache();
    CHECK_FALSE(mapped(p));
  }
}
#endif

#ifdef __linux__
TEST_CASE("a miss of a huge class under the limit still takes an earlier step's huge block, and the trace replays it",
          "[allocator]") {
  memory::release_cache();
  const std::size_t base = memory::stats().system_bytes;
  REQUIRE(base < 4 * kMiB);
  memory::Trace trace;
  unsigned char *old = nullptr, *p = nullptr;
  void* live = nullptr;
  bool kept_bytes = false;
  memory::Stats before, after;
  {
    memory::TraceScope scope;
    memory::begin_step();
    live = memory::allocate(20 * kMiB);  // live throughout: 26 MiB live peak, limit 32.5 MiB
    old = cached_huge(6, 0x5A);
    before = memory::stats();
    memory::begin_step();
    // 26 + 5 MiB held would be under the limit: the limit alone gives nothing back, the huge rule the 6 MiB.
    p = static_cast<unsigned char*>(memory::allocate(5 * kMiB));
    after = memory::stats();
    kept_bytes = p[5 * kMiB - 4096] == 0x5A;
    memory::deallocate(p, 5 * kMiB);
    memory::deallocate(live, 20 * kMiB);
    trace = scope.trace();
  }
  CHECK(after.evicted_bytes - before.evicted_bytes == 6 * kMiB);
  CHECK(after.system_bytes == before.system_bytes - 6 * kMiB + 5 * kMiB);
  if (memory::huge_blocks()) {
    CHECK(p == old);  // the 6 MiB mapping, cut to 5 MiB: its bytes, not zeroed pages
    CHECK(kept_bytes);
  }
  CHECK(trace.summary().peak_system_bytes == memory::stats().peak_system_bytes - base);
  memory::release_cache();
}
#endif

TEST_CASE("recycled_for: the smallest block covering what is lacking, else the largest, until covered", "[allocator]") {
  using V = std::vector<std::size_t>;
  const std::size_t M = kMiB;
  CHECK(memory::recycled_for(7 * M, V{3 * M, 10 * M, 4 * M, 8 * M}) == V{8 * M});
  CHECK(memory::recycled_for(7 * M, V{3 * M, 4 * M, 1 * M}) == V{4 * M, 3 * M});
  CHECK(memory::recycled_for(9 * M, V{3 * M, 4 * M}) == V{4 * M, 3 * M});  // all there is
  CHECK(memory::recycled_for(6 * M, V{4 * M, 4 * M}) == V{4 * M, 4 * M});  // one entry per block
  CHECK(memory::recycled_for(1 * M, V{3 * M}).empty());                   // not a recycled class
  CHECK(memory::recycled_for(3 * M, V{1 * M}).empty());                   // nor is the block's
}

#ifdef __linux__
TEST_CASE("a huge miss lays shorter blocks of earlier steps end to end: their bytes, in the rule's order",
          "[allocator]") {
  memory::release_cache();
  REQUIRE(memory::stats().system_bytes < 4 * kMiB);
  memory::begin_step();
  void* live = memory::allocate(20 * kMiB);  // a live peak that keeps the limit out of the way
  auto* a = static_cast<unsigned char*>(memory::allocate(4 * kMiB));
  auto* b = static_cast<unsigned char*>(memory::allocate(3 * kMiB));
  std::memset(a, 0xA1, 4 * kMiB);
  std::memset(b, 0xB2, 3 * kMiB);
  memory::deallocate(a, 4 * kMiB);
  memory::deallocate(b, 3 * kMiB);
  const auto before = memory::stats();
  memory::begin_step();
  auto* p = static_cast<unsigned char*>(memory::allocate(7 * kMiB));
  const auto after = memory::stats();
  CHECK(after.evicted_bytes - before.evicted_bytes == 7 * kMiB);  // both blocks went back
  CHECK(after.system_bytes == before.system_bytes);
  if (memory::huge_blocks()) {
    CHECK(reinterpret_cast<std::uintptr_t>(p) % (std::size_t(2) << 20) == 0);
    CHECK(p[0] == 0xA1);
    CHECK(p[4 * kMiB - 1] == 0xA1);
    CHECK(p[4 * kMiB] == 0xB2);
    CHECK(p[7 * kMiB - 1] == 0xB2);
    CHECK_FALSE(mapped(a));  // moved, not copied
  }
  memory::deallocate(p, 7 * kMiB);
  memory::deallocate(live, 20 * kMiB);
  memory::release_cache();
}
#endif
