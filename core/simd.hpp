// Not xsimd's dispatch: target_clones compiles the same scalar loops per architecture with one attribute, where
// xsimd::dispatch needs one translation unit per architecture (bench/bench_libraries.cpp, docs/performance.md).
// Run-time instruction-set dispatch for the hot vectorized loops.
//
// The default build targets a portable baseline (x86-64-v2, CMakeLists.txt) so that pelab runs on any
// x86-64 CPU; the few loops where vector width pays (GELU, softmax, layer norm, AdamW, ...) carry
// PELAB_HOT, which makes GCC compile them three times (x86-64-v4: AVX-512, x86-64-v3: AVX2 + FMA, and
// the baseline) and pick one when the program loads (an ifunc). Builds for one CPU (-DPELAB_NATIVE=ON,
// -DPELAB_MARCH=...) and other compilers or architectures get a plain function.
//
// The clones differ only in vector width and in fused multiply-adds: the hot loops are compiled with
// FMA contraction (CMakeLists.txt), the rest of pelab without. So on a CPU with AVX2 or AVX-512 the
// portable build and a -march=native build contract the same loops (not checked bit for bit), while the
// baseline clone (a CPU without AVX2) rounds the hot loops' a * b + c once more. Reductions use a fixed
// number of accumulators, so vector width never changes what is added in which order.
// tests/core_f32/test_kernels.cpp checks the kernels against plain references; run under valgrind (no
// AVX-512) it exercises the x86-64-v3 clone, and a -DPELAB_DISPATCH=OFF build the baseline.
//
// Mark whole loops, never per-element helpers: a clone is reached through an indirect call.
#pragma once

#include <string>

#if defined(PELAB_DISPATCH) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PELAB_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PELAB_HOT
#endif

namespace pelab::simd {

// What the hot loops run as, for run headers: e.g. "built for x86-64-v2; hot loops: x86-64-v4 clone
// (AVX-512)" or "built for native (no run-time dispatch)".
std::string summary();

}  // namespace pelab::simd
