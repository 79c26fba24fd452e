// The shape-only trial (issue #40; core/shape_only.hpp): a dry run of the trial's sub-graph
// (shape_only_trial.hpp) takes from the allocator exactly what the real run takes, in the same order,
// touches no memory, draws nothing and leaves every result bit-identical.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/allocator.hpp"
#include "layers/transformer.hpp"
#include "layers/shape_only_trial.hpp"

using namespace pelab;
using pelab::test::TrialShape;
using pelab::test::run_trial;

namespace {

std::vector<TrialShape> small_shapes() {
  std::vector<TrialShape> v;
  for (bool train : {true, false})
    for (bool shared : {true, false}) {
      TrialShape s;
      s.train = train, s.shared_positions = shared;
      v.push_back(s);
      s.B = 3, s.T = 37, s.C = 24, s.H = 3, s.F = 40;  // odd sizes: classes that are not powers of two
      v.push_back(s);
      s.B = 1, s.T = 300, s.C = 32, s.H = 4, s.F = 128;  // blocks past 256 KiB (the (1, H, T, T) bias)
      v.push_back(s);
    }
  return v;
}

}  // namespace

TEST_CASE("shape-only trace equals the real run's, event by event", "[shape_only]") {
  for (const TrialShape& s : small_shapes()) {
    CAPTURE(s.B, s.T, s.C, s.H, s.F, s.train, s.shared_positions);
    const auto real_run = run_trial(s, false), dry = run_trial(s, true);
    REQUIRE(!real_run.trace.events.empty());
    CHECK(dry.trace.events == real_run.trace.events);
    const auto a = real_run.trace.summary(), b = dry.trace.summary();
    CHECK(a == b);
    CHECK(a.peak_live_bytes > 0);
    CHECK(a.peak_system_bytes >= a.peak_live_bytes);
    CHECK(memory::fake_blocks_live() == 0);
  }
}

TEST_CASE("a dry run touches no memory, draws nothing and changes no result", "[shape_only]") {
  TrialShape s;
  s.B = 2, s.T = 33, s.C = 16, s.H = 4, s.F = 32;
  const auto before = run_trial(s, false, 7);
  const memory::Stats st0 = memory::stats();
  Rng rng(3);
  const Rng::State r0 = rng.state();
  {
    TrialShape big = s;
    big.B = 4, big.T = 20000, big.C = 1024, big.H = 8, big.F = 4096;  // 12.8 GB of (B, H, T, T) alone
    const auto dry = run_trial(big, true);
    CHECK(dry.trace.summary().peak_live_bytes > (std::size_t(12) << 30));
  }
  const memory::Stats st1 = memory::stats();
  CHECK(st1.system_allocs == st0.system_allocs);  // nothing obtained from the system,
  CHECK(st1.system_bytes == st0.system_bytes);
  CHECK(st1.cache_hits == st0.cache_hits);        // nothing taken from or given to the free lists
  CHECK(st1.cached_bytes == st0.cached_bytes);
  CHECK(rng.state() == r0);
  const auto after = run_trial(s, false, 7);
  REQUIRE(after.values.size() == before.values.size());
  for (std::size_t i = 0; i < before.values.size(); ++i)
    CHECK(std::memcmp(after.values[i].data(), before.values[i].data(), before.values[i].size() * sizeof(real)) == 0);
}

TEST_CASE("a tensor of a shape-only scope released after it never reaches the real free lists", "[shape_only]") {
  const memory::Stats st0 = memory::stats();
  Tensor kept;
  {
    ShapeOnly dry;
    kept = Tensor::zeros({1000, 1000});
    CHECK_THROWS_AS(kept.item(), Error);
  }
  CHECK(memory::fake_blocks_live() >= 1);  // its value (and the one-element default Array of its grad)
  kept = Tensor();
  CHECK(memory::fake_blocks_live() == 0);
  CHECK(memory::stats().cached_bytes == st0.cached_bytes);
  CHECK(memory::stats().system_allocs == st0.system_allocs);
}

TEST_CASE("a shape-only model at d_model 65536 allocates and initializes nothing", "[shape_only]") {
  ModelConfig c;
  c.vocab = 11, c.d_model = 65536, c.n_layers = 1, c.n_heads = 8, c.encoding = "alibi", c.train_seq_len = 16;
  ShapeOnly dry;
  std::size_t requested = 0, params = 0;
  {
    Transformer m(c);  // about 206 GB of parameters: fake blocks
    for (const auto& p : m.parameters()) {
      params += p.tensor.numel();
      // Its value, and two one-element blocks: a default-constructed xtensor Array holds one element,
      // and a TensorImpl starts with two (its value, replaced at once, and its gradient).
      requested += memory::size_class(p.tensor.numel() * sizeof(real)) + 2 * memory::size_class(sizeof(real));
    }
  }
  // The parameter count falls out of the trace, as the arithmetic of the shapes says: embedding (V, C),
  // per block two LayerNorms (2C each), qkv (3C, C) + 3C, proj (C, C) + C, MLP (4C, C) + 4C and
  // (C, 4C) + C; ln_f 2C; the head (V, C). alibi has no parameters.
  const std::size_t C = c.d_model, V = c.vocab;
  CHECK(params == V * C + (4 * C + 3 * C * C + 3 * C + C * C + C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C + V * C);
  std::size_t traced = 0;
  for (const auto& [cls, n] : dry.trace().summary().requests) traced += cls * n;
  // Beside them only the small blocks of default-constructed members (an IndexArray holds one element).
  CHECK(traced >= requested);
  CHECK(traced - requested < 4096);
  CHECK(double(dry.trace().summary().peak_live_bytes) > 200e9);
}
