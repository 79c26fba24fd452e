// Memory bounded by the largest step (issue #41 item 4; core/allocator.hpp, the reuse rule): training
// steps of mixed lengths touch a size class per length, and the caching allocator must not keep them all.
// Config (d)'s shape (bench/bench_train.cpp: experiments/reproduce/deletang.toml, d 64, 5 layers, 8 heads,
// bidirectional, T = 2n for a size n in 1..40 drawn per step; batch 16 here instead of 128, to stay fast):
// after 200 steps the bytes the allocator holds from the system stay within 1.3x of the largest single
// step's peak. Read from the allocator's own counters, not RSS; skipped under AddressSanitizer (its
// allocator is another one).
#include <catch2/catch.hpp>

#include <algorithm>

#include "sanitized.hpp"
#include "core/allocator.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/rng.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"

using namespace pelab;

namespace {

constexpr std::size_t kBatch = 16, kMaxSize = 40;

// One training step at problem size n (T = 2n): forward, loss, backward; the gradients are dropped
// after it, as an optimizer's zero_grad does.
void step(Transformer& m, std::size_t n) {
  const std::size_t T = 2 * n;
  IndexArray tokens(Shape{kBatch, T}), positions(Shape{kBatch, T});
  for (std::size_t b = 0; b < kBatch; ++b)
    for (std::size_t t = 0; t < T; ++t) tokens(b, t) = std::int32_t((b + 3 * t) % 11), positions(b, t) = std::int32_t(t);
  cross_entropy(m.forward(tokens, positions), tokens).backward();
  m.zero_grad();
}

}  // namespace

TEST_CASE("after 200 mixed-length steps the allocator holds at most 1.3x the largest step's peak", "[allocator]") {
  if (test::kAddressSanitizer) {
    WARN("skipped under AddressSanitizer: the caching allocator's counters are not what holds the memory");
    return;
  }
  ModelConfig c;
  c.vocab = 11, c.d_model = 64, c.n_layers = 5, c.n_heads = 8, c.causal = false, c.encoding = "none";
  c.train_seq_len = 2 * kMaxSize;
  Transformer m(c);
  Rng rng(1);
  init_parameters(m, rng);
  // The largest single step: the most bytes live at once in a step of each size, from an empty cache
  // (the parameters and what else the process holds live beside it).
  memory::release_cache();
  const std::size_t base = memory::stats().system_bytes;
  std::size_t largest = 0;
  for (std::size_t n = 1; n <= kMaxSize; ++n) {
    memory::TraceScope trace;
    step(m, n);
    largest = std::max(largest, trace.trace().summary().peak_live_bytes);
  }
  largest += base;
  memory::release_cache();
  Rng sizes(2026);
  for (int i = 0; i < 200; ++i) step(m, 1 + sizes.below(kMaxSize));
  const memory::Stats st = memory::stats();
  INFO("held " << st.system_bytes << " bytes (" << st.cached_bytes << " cached), largest step " << largest
               << ", evicted " << st.evicted_bytes);
  CHECK(double(st.system_bytes) <= 1.3 * double(largest));
  CHECK(st.cache_hits > 0);
}
