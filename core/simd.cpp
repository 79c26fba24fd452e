// The run header's SIMD line; why not xsimd: core/simd.hpp.
#include "core/simd.hpp"

#ifndef PELAB_MARCH
#define PELAB_MARCH ""
#endif

namespace pelab::simd {

std::string summary() {
  const std::string arch = PELAB_MARCH[0] ? PELAB_MARCH : "the compiler's default target";
#if defined(PELAB_DISPATCH) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  // The same test GCC's resolver makes for target_clones("arch=...").
  const char* clone = __builtin_cpu_supports("x86-64-v4")   ? "x86-64-v4 clone (AVX-512)"
                      : __builtin_cpu_supports("x86-64-v3") ? "x86-64-v3 clone (AVX2)"
                                                            : "baseline";
  return "built for " + arch + "; hot loops: " + clone;
#else
  return "built for " + arch + " (no run-time dispatch)";
#endif
}

}  // namespace pelab::simd
