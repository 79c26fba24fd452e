// The libxsmm GEMM path (core/blas_small.cpp) against OpenBLAS and the double-precision reference, and
// its results at 1 and 2 threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/blas.hpp"
#include "core/blas_small.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

using namespace pelab;

namespace {

std::vector<float> lcg(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(seed >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
  return v;
}

struct GemmShape {
  std::size_t M, N, K;
};

// One product by `fn` on padded operands; checks every element against gemm_reference within the
// rounding bound of a K-term float dot product (2 (K + 2) eps (|alpha| sum |a b| + |beta c|)) and the
// padding past each row of C untouched. Returns C.
std::vector<float> check_product(blas::GemmFn fn, bool ta, bool tb, const GemmShape& s, float alpha, float beta) {
  const std::size_t lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 2, ldc = s.N + 5;
  const auto A = lcg((ta ? s.K : s.M) * lda, 1 + s.M), B = lcg((tb ? s.N : s.K) * ldb, 2 + s.N);
  std::vector<float> C = lcg(s.M * ldc, 3 + s.K);
  std::vector<float> ref = C;
  fn(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  blas::gemm_reference(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, ref.data(), ldc);
  const double eps = std::numeric_limits<float>::epsilon();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < s.M; ++i)
    for (std::size_t j = 0; j < ldc; ++j) {
      if (j >= s.N) {
        if (std::memcmp(&C[i * ldc + j], &ref[i * ldc + j], sizeof(float)) != 0) ++bad;
        continue;
      }
      double mag = 0;
      for (std::size_t k = 0; k < s.K; ++k)
        mag += std::fabs(double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]));
      const double bound = 2.0 * double(s.K + 2) * eps * (std::fabs(alpha) * mag + std::fabs(beta));
      if (!(std::fabs(double(C[i * ldc + j]) - double(ref[i * ldc + j])) <= bound)) ++bad;
    }
  INFO("trans_a " << ta << " trans_b " << tb << " M " << s.M << " N " << s.N << " K " << s.K << " alpha " << alpha
                  << " beta " << beta);
  CHECK(bad == 0);
  return C;
}

bool g_small_ran = true;
void small_only(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha, const real* A,
                std::size_t lda, const real* B, std::size_t ldb, real beta, real* C, std::size_t ldc) {
  g_small_ran = blas::detail::small_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) && g_small_ran;
}

// The model's per-head and linear shapes at configs (a)-(c) (bench/README.md, "GEMM shapes"), odd sizes,
// and products larger than one block (256) in every dimension, with edges.
const GemmShape kShapes[] = {{32, 32, 16}, {32, 16, 32}, {128, 128, 32}, {128, 32, 128}, {1, 1, 1}, {17, 13, 29},
                         {70, 90, 150}, {512, 64, 192}, {20, 64, 300}, {300, 270, 520}};

}  // namespace

TEST_CASE("the libxsmm path agrees with the reference: every transpose pair, alpha and beta, padded rows",
          "[blas][libxsmm]") {
  if (!blas::detail::small_gemm_built()) {
    WARN("skipped: built without libxsmm (-DPELAB_LIBXSMM=OFF)");
    return;
  }
  g_small_ran = true;
  for (const GemmShape& s : kShapes)
    for (int t = 0; t < 4; ++t)
      for (const float alpha : {1.0f, 0.75f})
        for (const float beta : {0.0f, 1.0f, 0.5f}) check_product(small_only, t & 1, t & 2, s, alpha, beta);
  CHECK(g_small_ran);  // every product was computed by libxsmm, none handed back to OpenBLAS
  blas::check_gemm_agrees(small_only);
}

TEST_CASE("the libxsmm path's kernel cache: one dispatch argument changed at a time gets its own kernel",
          "[blas][libxsmm]") {
  if (!blas::detail::small_gemm_built()) {
    WARN("skipped: built without libxsmm (-DPELAB_LIBXSMM=OFF)");
    return;
  }
  // One (M, N, K), called back to back as attention calls its per-head products; each call changes one of
  // the arguments the kernel is dispatched by (beta, the leading dimensions, trans_a), so a cache keyed
  // on fewer would run the previous call's kernel and miss the reference.
  const std::size_t M = 24, N = 20, K = 8;
  struct Call {
    bool ta;
    std::size_t pad_a, pad_b, pad_c;
    float beta;
  };
  const Call calls[] = {{false, 0, 0, 0, 0.0f}, {false, 0, 0, 0, 1.0f}, {false, 3, 0, 0, 1.0f}, {false, 3, 5, 0, 1.0f},
                        {false, 3, 5, 7, 1.0f}, {true, 3, 5, 7, 1.0f},  {true, 3, 5, 7, 0.0f}, {false, 0, 0, 0, 0.0f}};
  for (const Call& c : calls) {
    const std::size_t lda = (c.ta ? M : K) + c.pad_a, ldb = N + c.pad_b, ldc = N + c.pad_c;
    const auto A = lcg((c.ta ? K : M) * lda, 11), B = lcg(K * ldb, 12);
    std::vector<float> C = lcg(M * ldc, 13), ref = C;
    REQUIRE(blas::detail::small_gemm(c.ta, false, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, c.beta, C.data(), ldc));
    blas::gemm_reference(c.ta, false, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, c.beta, ref.data(), ldc);
    double worst = 0;
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < ldc; ++j) worst = std::max(worst, std::fabs(double(C[i * ldc + j]) - ref[i * ldc + j]));
    INFO("trans_a " << c.ta << " lda " << lda << " ldb " << ldb << " ldc " << ldc << " beta " << c.beta);
    CHECK(worst <= 1e-4);  // float rounding of 8-term sums of |terms| < 1 (a wrong kernel errs by about 1)
  }
}

TEST_CASE("the libxsmm path and OpenBLAS agree within float rounding of each other", "[blas][libxsmm]") {
  if (!blas::detail::small_gemm_built()) {
    WARN("skipped: built without libxsmm (-DPELAB_LIBXSMM=OFF)");
    return;
  }
  for (const GemmShape& s : {GemmShape{128, 128, 32}, GemmShape{300, 270, 520}})
    for (int t = 0; t < 4; ++t) {
      const auto x = check_product(small_only, t & 1, t & 2, s, 0.5f, 1.0f);
      const auto o = check_product(blas::gemm_openblas, t & 1, t & 2, s, 0.5f, 1.0f);
      double worst = 0, scale = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, std::fabs(double(x[i]) - double(o[i])));
        scale = std::max(scale, std::fabs(double(o[i])));
      }
      CHECK(worst <= 1e-5 * scale);  // both within K eps of the exact product
    }
}

TEST_CASE("gemm through the libxsmm path gives the same bits at 1 and 2 threads", "[blas][libxsmm][threads]") {
  if (blas::gemm_path() != blas::GemmPath::libxsmm) {
    WARN("skipped: PELAB_GEMM selects OpenBLAS, or built without libxsmm");
    return;
  }
  if (parallel::hardware_threads() < 2) {
    WARN("skipped: one hardware thread");
    return;
  }
  // Cut into 2 pieces by the plan (blas::gemm_pieces), through the scratch of trans_b and of alpha != 1.
  const GemmShape shapes[] = {{1024, 256, 64}, {512, 1024, 96}, {600, 80, 700}};
  for (const GemmShape& s : shapes)
    for (int t = 0; t < 4; ++t)
      for (const float alpha : {1.0f, 0.25f}) {
        const bool ta = t & 1, tb = t & 2;
        const std::size_t lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
        const auto A = lcg((ta ? s.K : s.M) * lda, 5), B = lcg((tb ? s.N : s.K) * ldb, 6), C0 = lcg(s.M * s.N, 7);
        std::vector<std::vector<float>> out;
        for (const int threads : {1, 2}) {
          parallel::set_threads(threads);
          std::vector<float> C = C0;
          blas::gemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, 1.0f, C.data(), s.N);
          out.push_back(C);
        }
        parallel::set_threads(1);
        INFO("trans_a " << ta << " trans_b " << tb << " M " << s.M << " N " << s.N << " K " << s.K);
        CHECK(blas::gemm_pieces(s.M, s.N, s.K) == 2);
        CHECK(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)) == 0);
      }
}

TEST_CASE("PELAB_GEMM is libxsmm or openblas, anything else an error naming the variable", "[blas][libxsmm]") {
  CHECK(blas::gemm_path_from("openblas") == blas::GemmPath::openblas);
  // Unset: libxsmm when built (the default since 2026-11-26), else openblas.
  const auto def = blas::detail::small_gemm_built() ? blas::GemmPath::libxsmm : blas::GemmPath::openblas;
  CHECK(blas::gemm_path_from(nullptr) == def);
  CHECK(blas::gemm_path_from("") == def);
  if (blas::detail::small_gemm_built()) CHECK(blas::gemm_path_from("libxsmm") == blas::GemmPath::libxsmm);
  try {
    blas::gemm_path_from("mkl");
    FAIL("no error for PELAB_GEMM=mkl");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("PELAB_GEMM") != std::string::npos);
    CHECK(m.find("'mkl'") != std::string::npos);
    CHECK(m.find("openblas") != std::string::npos);
  }
}

TEST_CASE("the libxsmm path does not read C when beta is 0 (it may hold NaN), as BLAS", "[blas][libxsmm]") {
  if (!blas::detail::small_gemm_built()) {
    WARN("skipped: built without libxsmm (-DPELAB_LIBXSMM=OFF)");
    return;
  }
  for (const GemmShape& s : {GemmShape{32, 16, 32}, GemmShape{300, 270, 520}})
    for (int t = 0; t < 4; ++t)
      for (const float alpha : {1.0f, 0.5f}) {
        const bool ta = t & 1, tb = t & 2;
        const std::size_t lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
        const auto A = lcg((ta ? s.K : s.M) * lda, 8), B = lcg((tb ? s.N : s.K) * ldb, 9);
        std::vector<float> C(s.M * s.N, std::numeric_limits<float>::quiet_NaN());
        REQUIRE(blas::detail::small_gemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, 0.0f, C.data(), s.N));
        std::size_t nan = 0;
        for (float c : C) nan += std::isnan(c);
        INFO("trans_a " << ta << " trans_b " << tb << " M " << s.M << " alpha " << alpha);
        CHECK(nan == 0);
      }
}

TEST_CASE("transpose_b copies B^T exactly, by tiles and by libxsmm_otrans, edges included", "[blas][libxsmm]") {
  if (!blas::detail::small_gemm_built()) {
    WARN("skipped: built without libxsmm");
    return;
  }
  // (N, K): by libxsmm_otrans (short N), by tiles with ragged edges, whole tiles only.
  const std::pair<std::size_t, std::size_t> shapes[] = {{64, 32}, {5, 7}, {192, 64}, {1024, 256}, {131, 177},
                                                         {300, 7}, {256, 16 * 40}};
  for (const auto& [N, K] : shapes) {
    const std::size_t ldb = K + 3;
    const auto B = lcg(N * ldb, 11 + N);
    std::vector<float> T(K * N, -1.0f);
    blas::detail::transpose_b(B.data(), N, K, ldb, T.data());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j < K; ++j) bad += std::memcmp(&T[j * N + i], &B[i * ldb + j], sizeof(float)) != 0;
    INFO("N " << N << " K " << K);
    CHECK(bad == 0);
  }
}

TEST_CASE("gemm transposes B once for all its pieces: the bits of each piece transposing it",
          "[blas][libxsmm]") {
  if (blas::gemm_path() != blas::GemmPath::libxsmm) {
    WARN("skipped: PELAB_GEMM selects OpenBLAS, or built without libxsmm");
    return;
  }
  // Cut by rows (M >= N) and by columns; the models' shapes at (b) and (c).
  const GemmShape shapes[] = {{1024, 256, 64}, {512, 1024, 96}, {2048, 512, 128}, {2048, 256, 1024}, {600, 80, 700}};
  for (const GemmShape& s : shapes)
    for (const bool ta : {false, true})
      for (const float alpha : {1.0f, 0.25f}) {
        const std::size_t lda = (ta ? s.M : s.K) + 1, ldb = s.K + 2;
        const auto A = lcg((ta ? s.K : s.M) * lda, 8), B = lcg(s.N * ldb, 9), C0 = lcg(s.M * s.N, 10);
        std::vector<float> per_piece = C0, once = C0;
        {  // Under the test hook gemm skips its own transposition: each piece's small_gemm transposes B.
          struct Hook {
            Hook() { blas::set_serial_gemm_for_testing(small_only); }
            ~Hook() { blas::set_serial_gemm_for_testing(nullptr); }
          } hook;
          g_small_ran = true;
          blas::gemm(ta, true, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, 1.0f, per_piece.data(), s.N);
          CHECK(g_small_ran);  // every piece ran in libxsmm, none fell back
        }
        blas::gemm(ta, true, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, 1.0f, once.data(), s.N);
        INFO("trans_a " << ta << " M " << s.M << " N " << s.N << " K " << s.K << " alpha " << alpha);
        CHECK(blas::gemm_pieces(s.M, s.N, s.K) > 1);
        CHECK(std::memcmp(per_piece.data(), once.data(), once.size() * sizeof(float)) == 0);
      }
}

TEST_CASE("gemm_defer_alpha: its product times the factor it returns is gemm's bits, on both GEMM paths",
          "[blas][libxsmm]") {
  const blas::GemmPath saved = blas::gemm_path();
  // Attention's q k^T at head sizes 8 and 32 (one piece), a product gemm cuts in two, and odd sizes.
  const GemmShape shapes[] = {{40, 40, 8}, {80, 80, 8}, {64, 64, 32}, {1024, 256, 64}, {17, 13, 29}};
  for (const blas::GemmPath path : {blas::GemmPath::libxsmm, blas::GemmPath::openblas}) {
    if (!blas::gemm_path_available(path)) continue;
    blas::set_gemm_path(path);
    for (const GemmShape& s : shapes)
      for (int t = 0; t < 4; ++t)
        for (const float alpha : {1.0f, 0.35355339f, -3.0f}) {
          const bool ta = t & 1, tb = t & 2;
          const std::size_t lda = (ta ? s.M : s.K) + 1, ldb = (tb ? s.K : s.N) + 3, ldc = s.N + 2;
          const auto A = lcg((ta ? s.K : s.M) * lda, 8), B = lcg((tb ? s.N : s.K) * ldb, 9);
          std::vector<float> want(s.M * ldc, 7.0f), got = want;
          blas::gemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, 0.0f, want.data(), ldc);
          const float f = blas::gemm_defer_alpha(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb,
                                                 got.data(), ldc);
          for (std::size_t i = 0; i < s.M; ++i)
            for (std::size_t j = 0; j < s.N; ++j) got[i * ldc + j] *= f;
          INFO(blas::gemm_path_key(path) << " trans_a " << ta << " trans_b " << tb << " M " << s.M << " N " << s.N
                                         << " K " << s.K << " alpha " << alpha << " factor " << f);
          // The factor is alpha only where gemm scales in a pass of its own (libxsmm, one piece).
          const bool deferred = path == blas::GemmPath::libxsmm && alpha != 1.0f && blas::gemm_pieces(s.M, s.N, s.K) == 1;
          CHECK(f == (deferred ? alpha : 1.0f));
          CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
        }
  }
  blas::set_gemm_path(saved);
}
