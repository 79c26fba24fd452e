// OpenBLAS kernel selection (core/blas_coretype.hpp): the choice on pretended CPUs, the environment
// rules (a user's OPENBLAS_CORETYPE is never overridden; the re-exec happens at most once), a real
// re-exec of a helper program, and the GEMM agreement check that blas_summary() runs.
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "core/blas.hpp"
#include "core/blas_coretype.hpp"
#include "test_paths.hpp"

using namespace pelab;
using blas::CpuFeatures;

namespace {

CpuFeatures sse() { return {}; }
CpuFeatures avx() {
  CpuFeatures f;
  f.avx = true;
  return f;
}
CpuFeatures avx2() {  // Haswell .. Zen 3
  CpuFeatures f = avx();
  f.avx2 = f.fma = true;
  return f;
}
CpuFeatures skylake_x() {
  CpuFeatures f = avx2();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  return f;
}
CpuFeatures sapphire_rapids() {  // and Zen 4: AVX-512 with BF16
  CpuFeatures f = skylake_x();
  f.avx512bf16 = true;
  return f;
}
CpuFeatures knights_landing() {  // AVX-512F without BW/VL/DQ: SkylakeX kernels would fault
  CpuFeatures f = avx2();
  f.avx512f = true;
  return f;
}

// Runs a shell command, returns its stdout as key=value lines.
std::map<std::string, std::string> run(const std::string& cmd, int* status = nullptr) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int st = pclose(p);
  if (status) *status = st;
  std::map<std::string, std::string> kv;
  std::size_t pos = 0;
  while (pos < out.size()) {
    const std::size_t end = out.find('\n', pos);
    const std::string line = out.substr(pos, end - pos);
    const std::size_t eq = line.find('=');
    kv[line.substr(0, eq)] = eq == std::string::npos ? "" : line.substr(eq + 1);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  INFO(out);
  return kv;
}

const std::string kClean = std::string("env -u OPENBLAS_CORETYPE -u ") + blas::kReexecMarker +
                           " -u PELAB_TEST_STARTS OPENBLAS_NUM_THREADS=1 ";

}  // namespace

TEST_CASE("core classes: OpenBLAS core names by instruction set, unknown names are -1", "[blas][coretype]") {
  CHECK(blas::core_class("Prescott") == 0);
  CHECK(blas::core_class("Nehalem") == 0);
  CHECK(blas::core_class("Sandybridge") == 1);
  CHECK(blas::core_class("Haswell") == 2);
  CHECK(blas::core_class("Zen") == 2);
  CHECK(blas::core_class("SkylakeX") == 3);
  CHECK(blas::core_class("cooperlake") == 3);  // OpenBLAS compares case-insensitively too
  CHECK(blas::core_class("SapphireRapids") == 3);
  CHECK(blas::core_class("Unknown") == -1);
  CHECK(blas::core_class("Zen5000") == -1);
  CHECK(blas::core_class("") == -1);

  CHECK(blas::cpu_class(sse()) == 0);
  CHECK(blas::cpu_class(avx()) == 1);
  CHECK(blas::cpu_class(avx2()) == 2);
  CHECK(blas::cpu_class(skylake_x()) == 3);
  CHECK(blas::cpu_class(sapphire_rapids()) == 3);
  CHECK(blas::cpu_class(knights_landing()) == 2);
}

TEST_CASE("preferred core: only a lower class than the CPU's is replaced", "[blas][coretype]") {
  // The Sapphire Rapids case: Debian's OpenBLAS 0.3.21 picked Prescott.
  CHECK(blas::preferred_coretype("Prescott", sapphire_rapids()) == "Cooperlake");
  CHECK(blas::preferred_coretype("Prescott", skylake_x()) == "SkylakeX");
  CHECK(blas::preferred_coretype("Haswell", skylake_x()) == "SkylakeX");
  CHECK(blas::preferred_coretype("Zen", sapphire_rapids()) == "Cooperlake");
  CHECK(blas::preferred_coretype("Sandybridge", avx2()) == "Haswell");
  CHECK(blas::preferred_coretype("Prescott", avx()) == "Sandybridge");
  CHECK(blas::preferred_coretype("Prescott", knights_landing()) == "Haswell");
  // This machine (Zen 4): OpenBLAS's own Cooperlake is kept; so is any pick of the CPU's class.
  CHECK(blas::preferred_coretype("Cooperlake", sapphire_rapids()).empty());
  CHECK(blas::preferred_coretype("SkylakeX", sapphire_rapids()).empty());
  CHECK(blas::preferred_coretype("Zen", avx2()).empty());
  CHECK(blas::preferred_coretype("Haswell", avx2()).empty());
  // Never a downgrade, never a core name pelab does not know.
  CHECK(blas::preferred_coretype("SkylakeX", avx2()).empty());
  CHECK(blas::preferred_coretype("Prescott", sse()).empty());
  CHECK(blas::preferred_coretype("FutureLake", avx2()).empty());
}

TEST_CASE("decision: a set OPENBLAS_CORETYPE is never overridden and pelab re-executes at most once",
          "[blas][coretype]") {
  const auto spr = sapphire_rapids();
  auto d = blas::decide_coretype(nullptr, nullptr, "Prescott", spr);
  CHECK(d.reexec);
  CHECK(d.coretype == "Cooperlake");
  CHECK(d.marker == "Prescott->Cooperlake");

  d = blas::decide_coretype("Prescott", nullptr, "Prescott", spr);  // the user asked for it
  CHECK_FALSE(d.reexec);
  d = blas::decide_coretype("Haswell", nullptr, "Haswell", spr);
  CHECK_FALSE(d.reexec);
  d = blas::decide_coretype(nullptr, "Prescott->Cooperlake", "Prescott", spr);  // the loop guard
  CHECK_FALSE(d.reexec);
  d = blas::decide_coretype("", nullptr, "Prescott", spr);  // empty = unset, as for OpenBLAS
  CHECK(d.reexec);
  d = blas::decide_coretype(nullptr, nullptr, "Cooperlake", spr);
  CHECK_FALSE(d.reexec);
}

TEST_CASE("origin: how the running kernel was chosen", "[blas][coretype]") {
  CHECK(blas::coretype_origin(nullptr, nullptr, "Cooperlake") == "autodetected by OpenBLAS");
  CHECK(blas::coretype_origin("", nullptr, "Cooperlake") == "autodetected by OpenBLAS");
  CHECK(blas::coretype_origin("Haswell", nullptr, "Haswell") == "OPENBLAS_CORETYPE=Haswell, set outside pelab");
  CHECK(blas::coretype_origin("haswell", nullptr, "Haswell") == "OPENBLAS_CORETYPE=haswell, set outside pelab");
  // A marker left by pelab for another value: the value is the user's.
  CHECK(blas::coretype_origin("Haswell", "Prescott->SkylakeX", "Haswell") ==
        "OPENBLAS_CORETYPE=Haswell, set outside pelab");
  const std::string mine = blas::coretype_origin("SkylakeX", "Prescott->SkylakeX", "SkylakeX");
  CHECK(mine.rfind("chosen by pelab: OpenBLAS picked Prescott on this ", 0) == 0);
  CHECK(blas::coretype_origin("Bogus", nullptr, "Cooperlake") ==
        "OPENBLAS_CORETYPE=Bogus, set outside pelab; OpenBLAS does not provide Bogus and runs Cooperlake");
}

TEST_CASE("re-exec: a wrong OpenBLAS pick restarts the program once with the better kernel, same argv",
          "[blas][coretype]") {
  const std::string child = PELAB_REEXEC_CHILD;
  const std::string want = blas::preferred_coretype("Prescott", blas::cpu_features());
  int status = -1;
  auto kv = run(kClean + child + " Prescott 'two words' ''", &status);
  CHECK(status == 0);
  CHECK(kv["args"] == "[Prescott][two words][]");
  if (want.empty()) {  // a CPU without AVX: nothing better than Prescott, nothing to do
    WARN("this CPU has no AVX: only the no-reexec path is tested");
    CHECK(kv["starts"] == "1");
    return;
  }
  // The helper pretends OpenBLAS picked Prescott in every image: only the guard stops a second restart.
  CHECK(kv["starts"] == "2");
  CHECK(kv["coretype"] == want);
  CHECK(kv["marker"] == "Prescott->" + want);
  CHECK(kv["core"] == want);  // the restarted image really runs the chosen kernel
  CHECK(kv["origin"].rfind("chosen by pelab: OpenBLAS picked Prescott", 0) == 0);
}

TEST_CASE("re-exec: never when OPENBLAS_CORETYPE is set, nor when the pick is already the CPU's class",
          "[blas][coretype]") {
  const std::string child = PELAB_REEXEC_CHILD;
  auto kv = run(kClean + "OPENBLAS_CORETYPE=Prescott " + child + " Prescott");
  CHECK(kv["starts"] == "1");
  CHECK(kv["coretype"] == "Prescott");
  CHECK(kv["core"] == "Prescott");
  CHECK(kv["origin"] == "OPENBLAS_CORETYPE=Prescott, set outside pelab");

  const std::string own = blas::core_name();  // what OpenBLAS picks here by itself
  kv = run(kClean + child + " " + own);
  if (blas::core_class(own) >= blas::cpu_class(blas::cpu_features()) || blas::core_class(own) < 0) {
    CHECK(kv["starts"] == "1");
    CHECK(kv["coretype"].empty());
    CHECK(kv["origin"] == "autodetected by OpenBLAS");
  } else {
    CHECK(kv["starts"] == "2");  // OpenBLAS picks below this CPU's class here: the fix applies to itself
  }
}

namespace {
void gemm_off_by_a_little(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha, const real* A,
                          std::size_t lda, const real* B, std::size_t ldb, real beta, real* C, std::size_t ldc) {
  blas::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  C[(M / 2) * ldc + N / 2] *= real(1.001);  // 1e-3 relative: far beyond rounding, small enough to miss by eye
}
void gemm_ignoring_beta(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha, const real* A,
                        std::size_t lda, const real* B, std::size_t ldb, real, real* C, std::size_t ldc) {
  blas::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, real(0), C, ldc);
}
void gemm_writing_past_rows(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, real alpha,
                            const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                            std::size_t ldc) {
  blas::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  C[N] = real(7);  // the first padding element of row 0
}
}  // namespace

TEST_CASE("the GEMM agreement check passes on this kernel and catches wrong results", "[blas]") {
  CHECK_NOTHROW(blas::check_gemm_agrees());
  CHECK_NOTHROW(blas::check_gemm_agrees(blas::gemm_reference));
  CHECK_THROWS_WITH(blas::check_gemm_agrees(gemm_off_by_a_little), Catch::Contains("disagrees with the reference") &&
                                                                       Catch::Contains(blas::core_name()));
  CHECK_THROWS_WITH(blas::check_gemm_agrees(gemm_ignoring_beta), Catch::Contains("beta 0.5"));
  CHECK_THROWS_WITH(blas::check_gemm_agrees(gemm_writing_past_rows), Catch::Contains("past the end of a row"));
}

TEST_CASE("blas_summary names the library, the kernel, how it was chosen and the peak", "[blas]") {
  const std::string s = blas::blas_summary();
  INFO(s);
  CHECK(s.rfind("OpenBLAS ", 0) == 0);
  CHECK(s.find("kernel " + blas::core_name() + " (" + blas::coretype_origin() + ")") != std::string::npos);
  CHECK(s.find("gemm agrees with the reference") != std::string::npos);
  CHECK(s.find("sgemm peak ") != std::string::npos);
  CHECK(s.find(" GFLOP/s (1 thread") != std::string::npos);
  CHECK(blas::blas_summary() == s);  // computed once
}
