// The step's thread pool (core/parallel.hpp) and the GEMM split over it.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/blas.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

using namespace pelab;

namespace {

// Restores one thread when a test ends, whatever happens in it.
struct ThreadsGuard {
  explicit ThreadsGuard(int n) { parallel::set_threads(n); }
  ~ThreadsGuard() { parallel::set_threads(1); }
};

std::vector<real> lcg(std::size_t n, std::uint64_t seed) {
  std::vector<real> v(n);
  for (auto& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<real>(static_cast<double>(seed >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
  return v;
}

}  // namespace

TEST_CASE("for_range covers 0..n-1 once, in equal contiguous chunks, one per thread", "[parallel]") {
  const int hw = parallel::hardware_threads();
  for (int t = 1; t <= std::min(hw, 4); ++t) {
    ThreadsGuard g(t);
    REQUIRE(parallel::threads() == t);
    for (std::size_t n : {0ul, 1ul, 2ul, 7ul, 1000ul, 1001ul}) {
      std::vector<std::atomic<int>> hits(n);
      std::vector<std::size_t> begins(static_cast<std::size_t>(t), ~std::size_t(0));
      parallel::for_range(n, 1, [&](std::size_t c, std::size_t b, std::size_t e) {
        begins[c] = b;
        for (std::size_t i = b; i < e; ++i) hits[i]++;
      });
      INFO("threads " << t << ", n " << n);
      for (std::size_t i = 0; i < n; ++i) CHECK(hits[i] == 1);
      const std::size_t k = parallel::chunks(n, 1);
      CHECK(k == std::min<std::size_t>(n, std::size_t(t)));
      for (std::size_t c = 0; c < k; ++c) CHECK(begins[c] == parallel::chunk_begin(n, k, c));
    }
  }
}

TEST_CASE("chunks respects the grain, and nested calls run serially", "[parallel]") {
  ThreadsGuard g(std::min(parallel::hardware_threads(), 2));
  const std::size_t t = std::size_t(parallel::threads());
  CHECK(parallel::chunks(100, 100) == 1);
  CHECK(parallel::chunks(200, 100) == std::min<std::size_t>(t, 2));
  CHECK(parallel::chunks(0, 1) == 0);
  std::atomic<int> inner_chunks{0};
  parallel::for_range(2, 1, [&](std::size_t, std::size_t, std::size_t) {
    CHECK(parallel::in_parallel_region() == (t > 1));
    inner_chunks += int(parallel::chunks(1000, 1));
  });
  CHECK(inner_chunks == (t > 1 ? 2 : int(t)));
  CHECK_FALSE(parallel::in_parallel_region());
}

TEST_CASE("an exception in a chunk reaches the caller after every chunk ran", "[parallel]") {
  ThreadsGuard g(std::min(parallel::hardware_threads(), 2));
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH(parallel::for_range(8, 1,
                                        [&](std::size_t c, std::size_t, std::size_t) {
                                          ++ran;
                                          if (c + 1 == parallel::chunks(8, 1)) throw std::runtime_error("chunk failed");
                                        }),
                    "chunk failed");
  CHECK(ran == int(parallel::chunks(8, 1)));
  // The pool still works afterwards.
  std::atomic<int> sum{0};
  parallel::for_range(8, 1, [&](std::size_t, std::size_t b, std::size_t e) { sum += int(e - b); });
  CHECK(sum == 8);
}

TEST_CASE("thread counts outside 1..hardware threads are refused with a clear message", "[parallel]") {
  const int hw = parallel::hardware_threads();
  CHECK(parallel::check_threads(1, "--threads").empty());
  CHECK(parallel::check_threads(hw, "--threads").empty());
  CHECK_THAT(parallel::check_threads(0, "--threads"), Catch::Contains("--threads = 0") && Catch::Contains("allowed: 1 to"));
  CHECK_THAT(parallel::check_threads(-3, "train.threads"), Catch::Contains("train.threads = -3"));
  CHECK_THAT(parallel::check_threads(hw + 1, "--threads"),
             Catch::Contains("more than the " + std::to_string(hw) + " hardware threads"));
  CHECK_THROWS_AS(parallel::set_threads(0), Error);
  CHECK_THROWS_AS(parallel::set_threads(hw + 1), Error);
  CHECK(parallel::threads() == 1);
}

TEST_CASE("a GEMM split over threads gives the same bits as one call", "[parallel][blas]") {
  const int hw = parallel::hardware_threads();
  if (hw < 2) WARN("one hardware thread: the split runs with 1 thread only");
  struct Case { std::size_t M, N, K; };
  // The model's shapes at configs a, b, c (linear forward, dx, dW; attention blocks) and odd ones.
  const Case cases[] = {{1024, 192, 64}, {1024, 64, 192}, {192, 64, 1024}, {1024, 20, 64},  {2048, 512, 128},
                        {512, 128, 2048}, {2048, 768, 256}, {768, 256, 2048}, {2048, 1024, 256}, {256, 1024, 2048},
                        {2048, 20, 256}, {20, 256, 2048}, {1001, 333, 77}, {77, 1001, 333}, {64, 64, 64}};
  for (const Case& s : cases)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::size_t lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
      const auto A = lcg(s.M * s.K, 1 + t), B = lcg(s.K * s.N, 7 + t), C0 = lcg(s.M * s.N, 3);
      std::vector<real> one = C0;
      blas::gemm_serial(ta, tb, s.M, s.N, s.K, 1, A.data(), lda, B.data(), ldb, 1, one.data(), s.N);
      for (int threads = 2; threads <= std::min(hw, 3); ++threads) {
        ThreadsGuard g(threads);
        std::vector<real> split = C0;
        blas::gemm(ta, tb, s.M, s.N, s.K, 1, A.data(), lda, B.data(), ldb, 1, split.data(), s.N);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < one.size(); ++i) differ += split[i] != one[i];
        INFO(s.M << "x" << s.N << "x" << s.K << " trans " << ta << tb << ", " << threads << " threads");
        CHECK(differ == 0);
      }
    }
}
