#include "experiments/run/provenance.hpp"

#include <fstream>

#include "core/blas.hpp"
#include "core/blas_coretype.hpp"
#include "core/simd.hpp"

namespace pelab {

extern const char* const kGitVersion;  // generated at build time: cmake/git_version.cmake

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

std::string build_text() {
  std::string compiler =
#if defined(__clang__)
      "clang ";
#elif defined(__GNUC__)
      "GCC ";
#else
      "";
#endif
  return std::string(PELAB_BUILD_TYPE) + ", " + compiler + __VERSION__ + ", flags " + PELAB_BUILD_FLAGS;
}

}  // namespace

Provenance provenance(std::size_t threads) {
  Provenance p;
  p.version = kGitVersion;
  p.build = build_text();
  p.cpu = cpu_model();
  p.blas = blas::library_config() + "; kernel " + blas::core_name() + " (" + blas::coretype_origin() + ")";
  p.gemm = blas::gemm_path_name();
  p.simd = simd::summary();
  p.threads = threads;
  return p;
}

nlohmann::ordered_json to_json(const Provenance& p) {
  nlohmann::ordered_json j;
  j["version"] = p.version;
  j["build"] = p.build;
  j["cpu"] = p.cpu;
  j["blas"] = p.blas;
  j["gemm"] = p.gemm;
  j["simd"] = p.simd;
  j["threads"] = p.threads;
  return j;
}

std::string version_text() {
  const Provenance p = provenance(1);
  return "pelab " + p.version + "\nbuild: " + p.build + "\ncpu: " + p.cpu + "\nblas: " + p.blas + "\ngemm: " + p.gemm + " (for configs without [train] gemm)" +
         "\nsimd: " + p.simd;
}

}  // namespace pelab
