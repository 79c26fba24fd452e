// Never the slow OpenBLAS kernel by accident. A dynamic-arch OpenBLAS picks its kernels once, when
// the library loads, from the CPU model; on a CPU it does not know (Debian's 0.3.21 on a Sapphire
// Rapids Xeon) it falls back to generic SSE kernels (`Prescott`: 5x slower sgemm). OPENBLAS_CORETYPE
// overrides the choice but is read only at load time, so pelab, first thing in main(), compares what
// OpenBLAS picked with what the CPU supports and, when OpenBLAS picked a lower instruction-set class
// and nobody set OPENBLAS_CORETYPE, re-executes itself with the variable set.
//
// The rule (measured, bench/README.md): only the instruction-set class matters. Within one class the
// kernels are within noise of each other at pelab's GEMM sizes (Zen 4: Haswell, SkylakeX and
// Cooperlake within 3%), so a known core of the CPU's class is left alone; a lower class is replaced
// by the class's kernel: AVX-512 (F, BW, VL, DQ) -> SkylakeX (Cooperlake with AVX512-BF16: the same
// sgemm kernels plus bf16), AVX2 + FMA -> Haswell, AVX -> Sandybridge. A core name pelab does not
// know (a newer OpenBLAS) is never replaced, and neither is a value the user or machine set.
//
// The kernel is part of the determinism contract: float results depend on it (same kernel ->
// bit-identical), which is why blas_summary() names it in every run header.
#pragma once

#include <string>

namespace pelab::blas {

// The CPUID features that decide which OpenBLAS kernels can run (OS support included).
struct CpuFeatures {
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512bf16 = false;
};
CpuFeatures cpu_features();  // this CPU, via __builtin_cpu_supports

// Instruction-set class: 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512; -1 for a core name pelab does not know.
int core_class(const std::string& openblas_core);
int cpu_class(const CpuFeatures& cpu);

// The core type pelab wants instead of `detected` (OpenBLAS's pick) on a CPU with `cpu`, or "" to keep it.
std::string preferred_coretype(const std::string& detected, const CpuFeatures& cpu);

// What to do at startup, decided from the environment alone (env values: nullptr when unset).
struct CoretypeDecision {
  bool reexec = false;
  std::string coretype;  // OPENBLAS_CORETYPE for the new image
  std::string marker;    // kReexecMarker's value: "detected->chosen"
};
constexpr const char* kReexecMarker = "PELAB_OPENBLAS_REEXEC";  // set once pelab re-executed: the loop guard
CoretypeDecision decide_coretype(const char* env_coretype, const char* env_marker, const std::string& detected,
                                 const CpuFeatures& cpu);

// First thing in main(): when decide_coretype says so, sets OPENBLAS_CORETYPE and the marker and
// re-executes /proc/self/exe with the same argv (does not return then). If exec fails it undoes the
// variables, warns on stderr and returns. The second form takes OpenBLAS's pick and the CPU from the caller (tests).
void select_coretype(char** argv);
void select_coretype(char** argv, const std::string& detected, const CpuFeatures& cpu);

// How the running kernel was chosen, for the run header: "autodetected by OpenBLAS",
// "OPENBLAS_CORETYPE=Haswell, set outside pelab", "chosen by pelab: OpenBLAS picked Prescott on this AVX-512 CPU", ...
std::string coretype_origin(const char* env_coretype, const char* env_marker, const std::string& running);
std::string coretype_origin();  // from this process's environment and core

}  // namespace pelab::blas
