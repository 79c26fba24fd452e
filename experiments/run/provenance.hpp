// What produced a result: the source version, the build, the CPU and the kernels that decide float
// rounding (docs/performance.md, "Threads, CPUs and portable builds"). `pelab --version` prints it and
// every eval.json records it, so a results page can say exactly which build and machine made it. It
// stays out of config.toml: that file is the run's settings, compared on resume, and the same settings
// may be resumed by another build.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace pelab {

struct Provenance {
  std::string version;  // `git describe --always --dirty` of the source tree at build time
  std::string build;    // build type, compiler, flags and instruction set
  std::string cpu;      // model name from /proc/cpuinfo ("unknown" elsewhere)
  std::string blas;     // BLAS library, version and the kernel it runs
  std::string gemm;     // the GEMM path running (core/blas.hpp): "OpenBLAS" or "libxsmm 1.17 (JIT, target cpx)"
  std::string simd;     // what the hot loops run as (core/simd.hpp)
  std::size_t threads = 1;
};

Provenance provenance(std::size_t threads);
nlohmann::ordered_json to_json(const Provenance& p);
// `pelab --version`: "pelab <version>\nbuild: ...\ncpu: ...\nblas: ...\ngemm: ...\nsimd: ...".
std::string version_text();

}  // namespace pelab
