#include "core/blas_coretype.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/blas.hpp"

namespace pelab::blas {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const char* class_name(int c) {
  static const char* names[] = {"SSE", "AVX", "AVX2", "AVX-512"};
  return c >= 0 && c <= 3 ? names[c] : "unknown";
}

bool set(const char* env) { return env && *env; }  // an empty value counts as unset (OpenBLAS ignores it too)

}  // namespace

CpuFeatures cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  return f;
}

int core_class(const std::string& openblas_core) {
  // OpenBLAS 0.3.x x86_64 core names (driver/others/dynamic.c), by the newest instruction set their kernels use.
  static const std::vector<std::pair<const char*, int>> known = {
      {"katmai", 0},      {"coppermine", 0}, {"northwood", 0},  {"prescott", 0},    {"banias", 0},
      {"atom", 0},        {"core2", 0},      {"penryn", 0},     {"dunnington", 0},  {"nehalem", 0},
      {"athlon", 0},      {"opteron", 0},    {"opteron_sse3", 0}, {"barcelona", 0}, {"nano", 0},
      {"bobcat", 0},      {"sandybridge", 1}, {"bulldozer", 1}, {"piledriver", 1},  {"steamroller", 1},
      {"excavator", 1},   {"haswell", 2},    {"zen", 2},        {"skylakex", 3},    {"cooperlake", 3},
      {"sapphirerapids", 3}};
  const std::string n = lower(openblas_core);
  for (const auto& [name, c] : known)
    if (n == name) return c;
  return -1;
}

int cpu_class(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) return 3;  // what OpenBLAS's SkylakeX kernels assume
  if (f.avx2 && f.fma) return 2;
  if (f.avx) return 1;
  return 0;
}

std::string preferred_coretype(const std::string& detected, const CpuFeatures& cpu) {
  const int have = core_class(detected), can = cpu_class(cpu);
  if (have < 0 || have >= can) return "";  // unknown name, or already the CPU's class: OpenBLAS's choice stands
  switch (can) {
    case 3: return cpu.avx512bf16 ? "Cooperlake" : "SkylakeX";
    case 2: return "Haswell";
    case 1: return "Sandybridge";
    default: return "";
  }
}

CoretypeDecision decide_coretype(const char* env_coretype, const char* env_marker, const std::string& detected,
                                 const CpuFeatures& cpu) {
  CoretypeDecision d;
  if (set(env_coretype) || env_marker) return d;  // the user's or machine's choice; or we already re-executed
  d.coretype = preferred_coretype(detected, cpu);
  if (d.coretype.empty()) return d;
  d.reexec = true;
  d.marker = detected + "->" + d.coretype;
  return d;
}

void select_coretype(char** argv, const std::string& detected, const CpuFeatures& cpu) {
  const CoretypeDecision d = decide_coretype(std::getenv("OPENBLAS_CORETYPE"), std::getenv(kReexecMarker), detected, cpu);
  if (!d.reexec) return;
  std::fflush(nullptr);
  if (setenv("OPENBLAS_CORETYPE", d.coretype.c_str(), 1) == 0 && setenv(kReexecMarker, d.marker.c_str(), 1) == 0)
    execv("/proc/self/exe", argv);
  const int err = errno;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kReexecMarker);
  std::fprintf(stderr,
               "warning: OpenBLAS picked its %s kernels on a CPU with %s; restarting with OPENBLAS_CORETYPE=%s "
               "failed (%s). Continuing with %s: set OPENBLAS_CORETYPE=%s yourself for full speed.\n",
               detected.c_str(), class_name(cpu_class(cpu)), d.coretype.c_str(), std::strerror(err),
               detected.c_str(), d.coretype.c_str());
}

void select_coretype(char** argv) {
  select_coretype(argv, core_name(), cpu_features());
  // PELAB_GEMM (core/blas.hpp) is read here as well, first thing in main, so that a bad value stops the
  // program before it writes anything rather than at its first GEMM.
  try {
    default_gemm_path();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::exit(2);
  }
}

std::string coretype_origin(const char* env_coretype, const char* env_marker, const std::string& running) {
  std::string s;
  if (!set(env_coretype)) {
    s = "autodetected by OpenBLAS";
  } else {
    const std::string v = env_coretype, m = env_marker ? env_marker : "";
    const auto arrow = m.find("->");
    if (arrow != std::string::npos && m.substr(arrow + 2) == v)
      s = "chosen by pelab: OpenBLAS picked " + m.substr(0, arrow) + " on this " +
          class_name(cpu_class(cpu_features())) + " CPU";
    else
      s = "OPENBLAS_CORETYPE=" + v + ", set outside pelab";
    if (lower(v) != lower(running)) s += "; OpenBLAS does not provide " + v + " and runs " + running;
  }
  return s;
}

std::string coretype_origin() {
  return coretype_origin(std::getenv("OPENBLAS_CORETYPE"), std::getenv(kReexecMarker), core_name());
}

}  // namespace pelab::blas
