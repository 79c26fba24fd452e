#!/usr/bin/env bash
# Installs the Debian packages pelab needs (only those missing), then configures and builds.
# Idempotent: a second run installs nothing and rebuilds only what changed.
#   scripts/setup.sh [BUILD_DIR]      (default: build)
#   scripts/setup.sh --fuzz           only the packages scripts/fuzz.sh needs (clang, libFuzzer); no build
# PELAB_WITH_CHROMIUM=1 also installs chromium, for the test that opens report.html in a headless browser
# (ctest reports that test as skipped where chromium is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

packages=(g++ cmake make pkg-config
          ccache  # builds compile through it (CMakeLists.txt PELAB_CCACHE): a rebuild recompiles only what changed
          libxtensor-dev libopenblas-dev
          libxsimd-dev  # bench/bench_libraries.cpp only: xsimd's exp/erf against ours (docs/performance.md)
          libxtensor-blas-dev  # xt::linalg (SVD, eigenvalues) for `pelab probe spectrum`
          catch2 libspdlog-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
          gnuplot-nox fortunes-min fortunes  # char_lm corpora: fortunes-min (default), fortunes (2.6 MB, long contexts)
          openmpi-bin libopenmpi-dev  # MPI: sweeps across ranks, data-parallel training (docs/cluster.md)
          pybind11-dev python3-dev python3-numpy python3-pandas python3-matplotlib)  # the Python module (docs/python.md)
packages+=(python3-torch)  # PyTorch twins: parity fixtures (tests/pytorch), run.torch_model() and its test (docs/python.md)
# libxsmm: JIT kernels for the GEMMs (core/blas_small.cpp); x86-64 only (elsewhere CMake builds without it)
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] && packages+=(libxsmm-dev)
if [ "$build_dir" = "--fuzz" ]; then
  build_dir=""
  packages=(clang libclang-rt-14-dev)  # libclang-rt: libFuzzer and the sanitizer runtimes
fi
[ "${PELAB_WITH_CHROMIUM:-0}" = 1 ] && packages+=(chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -n "$build_dir" ] || exit 0
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
