// Figures for the shape-only trial's evaluation (docs/architecture.md, "Shape-only execution: the
// trial"). Hidden (tag [.]): it prints times and ratios and asserts only what a dry run must produce, never
// a time. Run: build/tests/test_layers "[shape_only_timing]" (alone: the RSS figure is the process's).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/allocator.hpp"
#include "layers/shape_only_trial.hpp"
#include "layers/positional/pairwise.hpp"
#include "layers/transformer.hpp"

using namespace pelab;
using pelab::test::TrialShape;
using pelab::test::run_trial;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double gib(std::size_t b) { return double(b) / double(std::size_t(1) << 30); }

// Best of 3 dry runs: seconds, and the trace's summary.
memory::TraceSummary time_dry(const char* what, const TrialShape& s) {
  double best = 1e9;
  memory::TraceSummary sum;
  std::size_t events = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_trial(s, true);
    best = std::min(best, seconds_since(t0));
    sum = r.trace.summary();
    events = r.trace.events.size();
  }
  std::printf("%-44s %8.4f s  %6zu events  peak live %10.1f GiB  peak system %10.1f GiB\n", what, best, events,
              gib(sum.peak_live_bytes), gib(sum.peak_system_bytes));
  return sum;
}

// /proc/self/status field in bytes (VmHWM, VmRSS).
std::size_t status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string k;
  std::size_t kb = 0;
  while (in >> k)
    if (k == key + ":" && in >> kb) return kb * 1024;
  return 0;
}

}  // namespace

TEST_CASE("shape-only trial: dry-run times at the CLI's largest sizes", "[.][shape_only_timing]") {
  TrialShape s;
  s.B = 1, s.T = 100000, s.C = 256, s.H = 8, s.F = 1024, s.train = false;
  CHECK(time_dry("eval  T=100000 B=1 C=256 H=8", s).peak_live_bytes > (std::size_t(300) << 30));
  s.train = true;
  time_dry("train T=100000 B=1 C=256 H=8", s);
  s.B = 8, s.T = 128, s.C = 65536, s.H = 8, s.F = 4 * 65536;
  time_dry("train T=128 B=8 d_model=65536 (one block)", s);
  s.train = false;
  time_dry("eval  T=128 B=8 d_model=65536 (one block)", s);
  // A whole model's parameters at d_model 65536, built shape-only (nothing drawn, nothing allocated).
  ModelConfig c;
  c.vocab = 50257, c.d_model = 65536, c.n_layers = 12, c.n_heads = 8, c.encoding = "alibi", c.train_seq_len = 1024;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t peak = 0;
  {
    ShapeOnly dry;
    { Transformer m(c); }
    peak = dry.trace().summary().peak_live_bytes;
  }
  std::printf("%-44s %8.4f s  parameters %10.1f GiB\n", "build 12-layer model d_model=65536", seconds_since(t0),
              gib(peak));
}

TEST_CASE("shape-only trial: evaluation's batch search by dry runs", "[.][shape_only_timing]") {
  // ResourceModel::eval_batch_that_fits bisects the batch; each probe would be one dry run.
  TrialShape s;
  s.T = 100000, s.C = 256, s.H = 8, s.F = 1024, s.train = false, s.shared_positions = false;
  const std::size_t limit = std::size_t(2) << 40, wanted = 64;  // 2 TiB, 64 examples
  const auto t0 = std::chrono::steady_clock::now();
  int probes = 0;
  auto fits = [&](std::size_t b) {
    ++probes;
    s.B = b;
    return run_trial(s, true).trace.summary().peak_system_bytes <= limit;
  };
  std::size_t lo = 0, hi = wanted;
  if (fits(wanted)) lo = wanted;
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  std::printf("eval batch search T=100000 (limit 2 TiB): batch %zu, %d dry runs, %.4f s\n", lo, probes,
              seconds_since(t0));
  CHECK(lo > 0);
}

TEST_CASE("shape-only trial: estimate against the measured peak at moderate shapes", "[.][shape_only_timing]") {
  for (bool train : {true, false}) {
    TrialShape s;
    s.B = 4, s.T = 1024, s.C = 256, s.H = 8, s.F = 1024, s.train = train;
    const auto est = run_trial(s, true).trace.summary();
    memory::release_cache();
    const std::size_t rss0 = status_bytes("VmRSS");
    { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS (Linux 4.0+)
    const auto real_run = run_trial(s, false);
    const std::size_t hwm = status_bytes("VmHWM");
    const auto traced = real_run.trace.summary();
    const double measured = double(hwm - rss0);
    std::printf("%s T=1024 B=4 C=256: estimate %.1f MiB, real trace %.1f MiB, RSS rise %.1f MiB: %.3fx\n",
                train ? "train" : "eval ", double(est.peak_system_bytes) / 1048576.0,
                double(traced.peak_system_bytes) / 1048576.0, measured / 1048576.0,
                double(est.peak_system_bytes) / measured);
    CHECK(est == traced);
  }
}

TEST_CASE("shape-only trial: an IndexArray table bypasses the allocator", "[.][shape_only_timing]") {
  // T5's and Shaw's bucket tables are IndexArrays (std::allocator): a dry run neither sees nor skips them.
  const std::size_t T = 10000;
  IndexArray pos(Shape{1, T});
  for (std::size_t t = 0; t < T; ++t) pos(0, t) = std::int32_t(t);
  const std::size_t rss0 = status_bytes("VmRSS");
  { std::ofstream("/proc/self/clear_refs") << "5"; }
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t events = 0;
  {
    ShapeOnly dry;
    const IndexArray table = pairwise_index(pos, true, QueryTile{}, [](std::int64_t d) { return std::int32_t(d); });
    events = dry.trace().events.size();
    CHECK(table.size() == T * T);
  }
  std::printf("IndexArray (1, T, T) at T=%zu in a dry run: %.3f s, %zu trace events, RSS rise %.1f MiB "
              "(T=100000: 100x, 37 GiB)\n", T, seconds_since(t0), events,
              double(status_bytes("VmHWM") - rss0) / 1048576.0);
  CHECK(events == 0);
}

TEST_CASE("shape-only trial: the hook's cost on real allocations", "[.][shape_only_hook]") {
  // Run alone (build/tests/test_layers "[shape_only_hook]"): the hook is installed by the first scope of the
  // process and stays. Min of 5 rounds of 10^6 request + release pairs of one cached 1 KiB block.
  auto round = [] {
    double best = 1e9;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000000; ++i) memory::deallocate(memory::allocate(1024), 1024);
      best = std::min(best, seconds_since(t0));
    }
    return best * 1e3;  // ns per pair
  };
  const double before = round();
  { memory::TraceScope installs; }
  const double after = round();
  std::printf("allocate + deallocate of a cached block: %.1f ns without the hook, %.1f ns with it\n", before, after);
}
