#!/usr/bin/env bash
# Fuzzes pelab's readers with libFuzzer (clang, ASan + UBSan): the config reader (TOML text -> validated
# config), the safetensors reader, the checkpoint reader (state.json + its files) and the command-line
# parsers of predict, probe and eval (tests/fuzz/fuzz_cli.cpp: NUL-separated words) and the abc encoding's
# bias file (tests/fuzz/fuzz_abc_bias.cpp). Each target runs a
# fixed number of inputs, starting from seed corpora: experiments/configs/*.toml and real checkpoints
# written by pelab (tests/fuzz/fuzz_seeds). A crash stops the script (exit 1) and leaves the input in
# BUILD/fuzz/crashes/; turn it into a regression test before fixing it.
#   scripts/fuzz.sh            1,000,000 inputs per target (the local run; minutes)
#   scripts/fuzz.sh --ci       a short bounded run (CI): 50,000 inputs per target
#   scripts/fuzz.sh --runs N   N inputs per target
# Environment: PELAB_FUZZ_BUILD (default build-fuzz), PELAB_FUZZ_TARGETS (default: all five).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=1000000
case "${1:-}" in
  "") ;;
  --ci) runs=50000 ;;
  --runs) runs=${2:?--runs needs a number} ;;
  *) echo "usage: scripts/fuzz.sh [--ci | --runs N]" >&2; exit 2 ;;
esac
build=${PELAB_FUZZ_BUILD:-build-fuzz}
targets=(${PELAB_FUZZ_TARGETS:-fuzz_config fuzz_safetensors fuzz_checkpoint fuzz_cli fuzz_abc_bias})
export OPENBLAS_NUM_THREADS=1
bash scripts/setup.sh --fuzz  # clang and libFuzzer, if missing

# A build directory already configured with PELAB_FUZZ=ON (CI's sanitized build) is used as it is.
if ! grep -q "^PELAB_FUZZ:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DPELAB_FUZZ=ON \
        -DPELAB_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
fi
if ! cmake --build "$build" -j 2 --target "${targets[@]}" fuzz_seeds >"$build/fuzz-build.log" 2>&1; then
  grep -E "error|Error" "$build/fuzz-build.log" | head -n 40 >&2
  echo "fuzz: build failed (log: $build/fuzz-build.log)" >&2
  exit 1
fi

work=$build/fuzz
mkdir -p "$work/seeds/config" "$work/crashes"
cp experiments/configs/*.toml "$work/seeds/config/"
"$build/tests/fuzz/fuzz_seeds" "$work/seeds" >/dev/null
mkdir -p "$work/seeds/abc_bias" && cp tests/fixtures/abc_bias*.txt "$work/seeds/abc_bias/"  # bias files of abc
mkdir -p "$work/seeds/cli"  # command lines, words separated by NUL
i=0
for line in "predict runs/x --seed 3 --temperature 0.5 --tokens 10" "predict runs/x --len 8 -n 2 --json" \
            "probe encoding rope --len 64 --d-model 32 --heads 4 --set base=500" \
            "probe run runs/x --lengths 1,2,4 --samples 8 --seed 1" "probe spectrum --encoding alibi --length 32" \
            "eval runs/x --lengths 4,8 --samples 16 --json - --memory-limit 0" "eval runs/x --set eval.seed=2 --name a"; do
  printf '%s' "$line" | tr ' ' '\0' >"$work/seeds/cli/$((i++))"
done
rm -rf "$work/logs" && mkdir -p "$work/logs"

for t in "${targets[@]}"; do
  name=${t#fuzz_}
  mkdir -p "$work/corpus/$name"  # grows across local runs; CI starts from the seeds each time
  case $name in
    config) max_len=4096 ;;
    cli) max_len=512 ;;
    *) max_len=16384 ;;
  esac
  log=$work/logs/$name.log
  if ! "$build/tests/fuzz/$t" -runs="$runs" -seed=1 -max_len=$max_len -timeout=60 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/crashes/$name-" \
        "$work/corpus/$name" "$work/seeds/$name" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $t FAILED (input saved under $work/crashes/, full log $log)" >&2
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1)
  echo "fuzz: $t ok: $execs inputs, $rate exec/s, $cov, no crash"
done
