// The step's thread pool (core/parallel.hpp) and the GEMM split over it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstdint>
#include <stdexcept>
#include <utility>
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

// The pieces for_range(n, grain) hands out at the current thread count, as sorted (begin, end) pairs,
// each checked to come from a worker below workers(n, grain).
std::vector<std::pair<std::size_t, std::size_t>> pieces_seen(std::size_t n, std::size_t grain) {
  std::mutex mu;
  std::vector<std::pair<std::size_t, std::size_t>> seen;
  const std::size_t k = parallel::workers(n, grain);
  parallel::for_range(n, grain, [&](std::size_t w, std::size_t b, std::size_t e) {
    CHECK(w < k);
    std::lock_guard<std::mutex> lock(mu);
    seen.emplace_back(b, e);
  });
  std::sort(seen.begin(), seen.end());
  return seen;
}

TEST_CASE("for_range runs the plan's pieces, the same pieces at every thread count", "[parallel]") {
  const int hw = parallel::hardware_threads();
  if (hw < 2) WARN("one hardware thread: the plan is checked at 1 thread only");
  for (const std::size_t grain : {1ul, 3ul, 100ul})
    for (const std::size_t n : {0ul, 1ul, 2ul, 7ul, 199ul, 200ul, 1000ul, 1001ul}) {
      // The plan, written out: p equal contiguous pieces.
      const std::size_t p = parallel::pieces(n, grain);
      std::vector<std::pair<std::size_t, std::size_t>> plan;
      for (std::size_t c = 0; c < p; ++c)
        plan.emplace_back(parallel::chunk_begin(n, p, c), parallel::chunk_begin(n, p, c + 1));
      for (int t = 1; t <= std::min(hw, 4); ++t) {
        ThreadsGuard g(t);
        INFO("threads " << t << ", n " << n << ", grain " << grain);
        CHECK(parallel::pieces(n, grain) == p);
        CHECK(parallel::workers(n, grain) == std::min<std::size_t>(p, std::size_t(t)));
        CHECK(pieces_seen(n, grain) == plan);
      }
    }
}

TEST_CASE("pieces: powers of two and each at least the grain and at most kMaxPieces", "[parallel]") {
  CHECK(parallel::pieces(0, 1) == 0);
  CHECK(parallel::pieces(1, 1) == 1);
  CHECK(parallel::pieces(7, 1) == 4);
  CHECK(parallel::pieces(1000, 1) == parallel::kMaxPieces);
  CHECK(parallel::pieces(5, 100) == 1);  // less than a grain: still one piece
  CHECK(parallel::pieces(199, 100) == 1);
  CHECK(parallel::pieces(200, 100) == 2);
  CHECK(parallel::pieces(399, 100) == 2);
  CHECK(parallel::pieces(400, 100) == 4);
  CHECK(parallel::pieces(10, 0) == 8);  // grain 0 counts as 1
}

TEST_CASE("nested for_range runs the same pieces serially on the calling thread", "[parallel]") {
  ThreadsGuard g(std::min(parallel::hardware_threads(), 2));
  const std::size_t t = std::size_t(parallel::threads());
  const auto outside = pieces_seen(1000, 10);
  std::atomic<int> same{0};
  parallel::for_range(2, 1, [&](std::size_t, std::size_t, std::size_t) {
    CHECK(parallel::in_parallel_region() == (t > 1));
    if (t > 1) CHECK(parallel::workers(1000, 10) == 1);
    same += pieces_seen(1000, 10) == outside;
  });
  CHECK(same == 2);
  CHECK_FALSE(parallel::in_parallel_region());
}

TEST_CASE("an exception in a piece reaches the caller once every worker has stopped", "[parallel]") {
  ThreadsGuard g(std::min(parallel::hardware_threads(), 2));
  std::atomic<int> ran{0};
  // 8 pieces; the last one throws: every earlier piece has run by then, whatever the thread count.
  CHECK_THROWS_WITH(parallel::for_range(8, 1,
                                        [&](std::size_t, std::size_t b, std::size_t) {
                                          ++ran;
                                          if (b == 7) throw std::runtime_error("piece failed");
                                        }),
                    "piece failed");
  CHECK(ran == 8);
  // The pool still works afterwards.
  std::atomic<int> sum{0};
  parallel::for_range(8, 1, [&](std::size_t, std::size_t b, std::size_t e) { sum += int(e - b); });
  CHECK(sum == 8);
  // A throw stops its worker's later pieces: at one thread the first piece's throw is the only run.
  {
    ThreadsGuard one(1);
    ran = 0;
    CHECK_THROWS(parallel::for_range(8, 1, [&](std::size_t, std::size_t b, std::size_t) {
      ++ran;
      if (b == 0) throw std::runtime_error("first");
    }));
    CHECK(ran == 1);
  }
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

namespace {

struct Case { std::size_t M, N, K; };
// The model's shapes at configs a, b, c (linear forward, dx, dW; attention blocks) and odd ones.
const Case kCases[] = {{1024, 192, 64}, {1024, 64, 192}, {192, 64, 1024}, {1024, 20, 64},  {2048, 512, 128},
                       {512, 128, 2048}, {2048, 768, 256}, {768, 256, 2048}, {2048, 1024, 256}, {256, 1024, 2048},
                       {2048, 20, 256}, {20, 256, 2048}, {1001, 333, 77}, {77, 1001, 333}, {64, 64, 64}};

// C = alpha op(A) op(B) + beta C, with the sum over k taken in blocks whose length depends on the
// call's M and N: a stand-in for a BLAS whose rounding depends on the shape it is given (OpenBLAS
// 0.3.21's Haswell kernels on an AVX-512 CPU pick another code path for a piece than for the whole).
void shape_sensitive_gemm(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha, const real* A,
                          std::size_t lda, const real* B, std::size_t ldb, real beta, real* C, std::size_t ldc) {
  const std::size_t block = 1 + (M * 7 + N * 3) % 5;
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      real acc = 0, part = 0;
      for (std::size_t k = 0; k < K; ++k) {
        part += (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
        if ((k + 1) % block == 0) acc += part, part = 0;
      }
      C[i * ldc + j] = alpha * (acc + part) + (beta == real(0) ? real(0) : beta * C[i * ldc + j]);
    }
}

struct SerialGemmGuard {
  explicit SerialGemmGuard(blas::GemmFn fn) { blas::set_serial_gemm_for_testing(fn); }
  ~SerialGemmGuard() { blas::set_serial_gemm_for_testing(nullptr); }
};

// gemm(op(A) op(B) + C0) at `threads` threads.
std::vector<real> gemm_at(int threads, const Case& s, bool ta, bool tb, const std::vector<real>& A,
                          const std::vector<real>& B, const std::vector<real>& C0) {
  ThreadsGuard g(threads);
  std::vector<real> C = C0;
  blas::gemm(ta, tb, s.M, s.N, s.K, 1, A.data(), ta ? s.M : s.K, B.data(), tb ? s.K : s.N, 1, C.data(), s.N);
  return C;
}

std::size_t count_differ(const std::vector<real>& a, const std::vector<real>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

TEST_CASE("gemm_pieces: a fixed cut of the larger dimension into at most kGemmMaxPieces", "[parallel][blas]") {
  CHECK(blas::gemm_pieces(64, 64, 64) == 1);            // 262k multiply-adds: not worth a piece
  CHECK(blas::gemm_pieces(1024, 192, 64) == 2);         // config a's qkv projection
  CHECK(blas::gemm_pieces(64, 192, 1024) == 2);         // its weight gradient: cut into column blocks
  CHECK(blas::gemm_pieces(64, 100, 1024) == 1);         // pieces at least 64 wide
  CHECK(blas::gemm_pieces(2048, 1024, 256) == blas::kGemmMaxPieces);
  CHECK(blas::gemm_pieces(100, 100, 100000) == 1);      // each piece at least kMinPieceDim wide
  CHECK(blas::gemm_pieces(1024, 192, 0) == 1);
  ThreadsGuard g(std::min(parallel::hardware_threads(), 2));
  CHECK(blas::gemm_pieces(1024, 192, 64) == 2);         // the thread count plays no part
}

TEST_CASE("a GEMM gives the same bits at every thread count (OpenBLAS, and libxsmm when built)", "[parallel][blas]") {
  const int hw = parallel::hardware_threads();
  if (hw < 2) WARN("one hardware thread: the GEMM runs with 1 thread only");
  for (const blas::GemmPath path : {blas::GemmPath::openblas, blas::GemmPath::libxsmm}) {
    if (!blas::gemm_path_available(path)) continue;
    blas::set_gemm_path(path);
    for (const Case& s : kCases)
      for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        const auto A = lcg(s.M * s.K, 1 + t), B = lcg(s.K * s.N, 7 + t), C0 = lcg(s.M * s.N, 3);
        const std::vector<real> one = gemm_at(1, s, ta, tb, A, B, C0);
        for (int threads = 2; threads <= std::min(hw, 3); ++threads) {
          INFO(blas::gemm_path_key(path) << " " << s.M << "x" << s.N << "x" << s.K << " trans " << ta << tb << ", "
                                         << threads << " threads");
          CHECK(count_differ(gemm_at(threads, s, ta, tb, A, B, C0), one) == 0);
        }
      }
  }
  blas::set_gemm_path(blas::default_gemm_path());
}

TEST_CASE("the plan and not the kernel makes a GEMM independent of the thread count", "[parallel][blas]") {
  // With a GEMM whose rounding depends on each call's shape, only identical calls give identical bits.
  const int hw = parallel::hardware_threads();
  if (hw < 2) WARN("one hardware thread: the GEMM runs with 1 thread only");
  SerialGemmGuard guard(shape_sensitive_gemm);
  const Case cases[] = {{1024, 192, 64}, {64, 192, 1024}, {1001, 333, 77}, {20, 256, 2048}};
  for (const Case& s : cases)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      INFO(s.M << "x" << s.N << "x" << s.K << " trans " << ta << tb);
      const auto A = lcg(s.M * s.K, 1 + t), B = lcg(s.K * s.N, 7 + t), C0 = lcg(s.M * s.N, 3);
      const std::vector<real> one = gemm_at(1, s, ta, tb, A, B, C0);
      // The stand-in can tell a cut from the whole: a plan that cut differently would be caught below.
      std::vector<real> whole = C0;
      blas::gemm_serial(ta, tb, s.M, s.N, s.K, 1, A.data(), ta ? s.M : s.K, B.data(), tb ? s.K : s.N, 1, whole.data(),
                        s.N);
      REQUIRE(blas::gemm_pieces(s.M, s.N, s.K) > 1);
      CHECK(count_differ(whole, one) > 0);
      for (int threads = 2; threads <= std::min(hw, 3); ++threads) {
        INFO(threads << " threads");
        CHECK(count_differ(gemm_at(threads, s, ta, tb, A, B, C0), one) == 0);
      }
    }
}
