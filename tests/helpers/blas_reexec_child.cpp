// Helper program of tests/core_f32/test_blas_coretype.cpp: runs pelab's startup kernel selection as if
// OpenBLAS had picked argv[1], then prints what the final process image sees. It counts its own starts
// in PELAB_TEST_STARTS and gives up after 5, so a broken loop guard fails the test instead of hanging it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/blas.hpp"
#include "core/blas_coretype.hpp"

int main(int argc, char** argv) {
  const char* n = std::getenv("PELAB_TEST_STARTS");
  const int starts = (n ? std::atoi(n) : 0) + 1;
  setenv("PELAB_TEST_STARTS", std::to_string(starts).c_str(), 1);
  if (starts > 5) {
    std::printf("starts=%d\nloop\n", starts);
    return 3;
  }
  if (argc < 2) return 2;
  pelab::blas::select_coretype(argv, argv[1], pelab::blas::cpu_features());
  const char* ct = std::getenv("OPENBLAS_CORETYPE");
  const char* marker = std::getenv(pelab::blas::kReexecMarker);
  std::printf("starts=%d\ncoretype=%s\nmarker=%s\ncore=%s\nargs=", starts, ct ? ct : "", marker ? marker : "",
              pelab::blas::core_name().c_str());
  for (int i = 1; i < argc; ++i) std::printf("[%s]", argv[i]);
  std::printf("\norigin=%s\n", pelab::blas::coretype_origin().c_str());
  return 0;
}
