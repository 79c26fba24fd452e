// The one BLAS wrapper. Row-major GEMM on raw storage; <cblas.h> is included only in blas.cpp
// because it clashes with xtensor-blas headers in one translation unit.
#pragma once

#include <cstddef>
#include <string>

#include "core/tensor.hpp"

namespace pelab::blas {

// A GEMM with gemm's contract (below).
using GemmFn = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, real, const real*, std::size_t,
                        const real*, std::size_t, real, real*, std::size_t);

// C (M x N) = alpha * op(A) * op(B) + beta * C, all row-major with leading dimensions.
// op(A) is M x K (A stored K x M when trans_a), op(B) is K x N (B stored N x K when trans_b).
// beta = 1 accumulates, which is how backward adds into existing gradients.
//
// The plan (core/parallel.hpp): the larger of M and N is cut into gemm_pieces(M, N, K) contiguous
// pieces, one single-threaded BLAS call each, and the pieces run on the step's threads. The cut depends
// on the shape alone, so one thread makes the same calls as many and the result is the same bits at
// any thread count on any CPU, whatever the BLAS kernel does with a piece's shape (tests/core_f32/
// test_parallel.cpp checks it with a deliberately shape-sensitive GEMM). Each piece packs the operand
// the pieces share again, which one thread pays for too: at most kGemmMaxPieces pieces (2 keep two
// threads busy and cost 1-4% of a step at one thread; 4 cost 3-6%: bench/README.md, "The fixed plan"),
// each at least kMinPieceDim wide and kMinPieceWork multiply-adds (less is not worth a thread).
constexpr std::size_t kGemmMaxPieces = 2;
constexpr std::size_t kMinPieceDim = 64;
constexpr std::size_t kMinPieceWork = std::size_t(1) << 21;
std::size_t gemm_pieces(std::size_t M, std::size_t N, std::size_t K);
void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
          const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
          std::size_t ldc);

// C (M, N) = alpha op(A) op(B) (beta 0) as gemm computes it, except that where gemm would multiply the
// product by alpha in a pass of its own (the libxsmm path: the product with alpha 1, then C *= alpha,
// core/blas_small.cpp) that multiplication is left to the caller: returns the factor still to apply, alpha
// there and 1 otherwise. A caller's c * factor is then the same bits as gemm's C, one memory pass fewer
// (attention applies it in its softmax's first pass).
real gemm_defer_alpha(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                      const real* A, std::size_t lda, const real* B, std::size_t ldb, real* C, std::size_t ldc);

// The same, always on the calling thread.
void gemm_serial(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                 const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                 std::size_t ldc);

// Which code computes a piece (gemm_kernel): `libxsmm` (built with -DPELAB_LIBXSMM=ON, the x86-64
// default: libxsmm's JIT kernels, core/blas_small.cpp, about twice as fast as OpenBLAS on pelab's shapes
// on an AVX-512 CPU; OpenBLAS for a shape libxsmm has no kernel for) or `openblas` (every product in
// OpenBLAS: the path of every result committed before 2026-11-26, and the only one when real is double
// or the build has no libxsmm). The paths round differently, so the path is part of a result's
// determinism contract like the OpenBLAS kernel: a run's config records it ([train] gemm,
// experiments/config/config.hpp) and the run header names it (blas_summary).
//
// The process starts on default_gemm_path(): the environment variable PELAB_GEMM when set, else libxsmm
// when built, else openblas. A run switches to its config's path (set_gemm_path) before it builds its
// model. Throws pelab::Error naming PELAB_GEMM, its value and the allowed values when it is set to
// anything else.
enum class GemmPath { libxsmm, openblas };
GemmPath gemm_path();
GemmPath default_gemm_path();
GemmPath gemm_path_from(const char* pelab_gemm);  // what the variable's value means (nullptr: unset)
// Not thread-safe against GEMMs in flight: call it between runs, outside parallel regions. libxsmm
// on a build without it (or when real is double) means openblas, as gemm_path_from says.
void set_gemm_path(GemmPath path);
bool gemm_path_available(GemmPath path);  // libxsmm: this build has it and real is float
const char* gemm_path_key(GemmPath path);  // "libxsmm" or "openblas": the config's and PELAB_GEMM's spelling
std::string gemm_path_name();  // "libxsmm 1.17 (JIT, target skx)" or "OpenBLAS"

// What gemm_serial runs for one piece (K > 0), without the test hook (set_serial_gemm_for_testing):
// gemm_path()'s kernel. Benchmarks wrap it to time each product (bench/bench_train.cpp --gemm-shapes).
void gemm_kernel(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                 const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                 std::size_t ldc);

// OpenBLAS itself, whatever gemm_path() says (K > 0): the sgemm peaks are measured with it.
void gemm_openblas(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                   const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                   std::size_t ldc);

// Naive triple loop with the same contract: the reference the GEMM tests compare against.
void gemm_reference(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, real alpha,
                    const real* A, std::size_t lda, const real* B, std::size_t ldb, real beta, real* C,
                    std::size_t ldc);

// Tests only: gemm_serial calls `fn` instead of the BLAS (nullptr: the BLAS again). Lets a test stand
// in a GEMM whose rounding depends on the shape of each call, to show that the plan, not the kernel,
// makes results independent of the thread count. Not thread-safe: set it outside parallel regions.
void set_serial_gemm_for_testing(GemmFn fn);

// OpenBLAS threads. pelab keeps OpenBLAS at 1 (parallel::set_threads sets it): its own pool splits GEMMs.
void set_num_threads(int n);
int num_threads();

// The OpenBLAS kernel set in use ("Haswell", "SkylakeX", ...: openblas_get_corename) and the library's
// build line ("OpenBLAS 0.3.21 DYNAMIC_ARCH ..."). core/blas_coretype.hpp chooses the kernel.
std::string core_name();
std::string library_config();

// Compares gemm with gemm_reference on small and medium problems (every transpose pair, beta 0 and
// not 0, leading dimensions wider than the rows); throws std::runtime_error naming the kernel if they disagree
// beyond float rounding. Run once per process and GEMM path by blas_summary(); `under_test` replaces gemm (tests).
void check_gemm_agrees(GemmFn under_test = gemm);

// Single-thread OpenBLAS GEMM (sgemm; dgemm when real is double) peak in GFLOP/s: the best of repeated 512^3
// products within about `seconds` (a short measurement, for the run header).
double measure_peak_gflops(double seconds = 0.02);

// One line for run headers and train.log: library, kernel and how it was chosen, the GEMM path, the
// agreement check and the measured peak, e.g. "OpenBLAS 0.3.21, kernel Haswell (OPENBLAS_CORETYPE);
// GEMMs by libxsmm 1.17 (JIT, target skx) (the default); gemm agrees with the reference; sgemm peak
// 98.5 GFLOP/s (1 thread, 512^3)" (the peak is OpenBLAS's). The peak is measured once per process
// (about 40 ms), the check once per path; throws std::runtime_error when the GEMM check fails.
std::string blas_summary();

}  // namespace pelab::blas
