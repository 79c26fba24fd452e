#!/usr/bin/env bash
# The nope_temperature experiment (docs/results.md, "Attention temperature"): the sweep of
# experiments/configs/nope_temperature.toml (NoPE and RoPE x [attention] scaling none / log_length /
# learned); the same with log-length scaling unclamped (log n / log L also below L, so training itself
# changes: the form of Chiang & Cholak 2022); the runs trained without scaling re-evaluated with
# log-length scaling and with a fixed temperature 0.8 at evaluation only; then the report.
#   scripts/nope_temperature.sh [SWEEP_DIR]  (default runs/nope_temperature; PELAB=path/to/pelab;
#   JOBS=cells in parallel, default 2: one per core of a 2-core machine)
set -euo pipefail
cd "$(dirname "$0")/.."
PELAB=${PELAB:-build/pelab}
OUT=${1:-runs/nope_temperature}
JOBS=${JOBS:-2}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
CFG=experiments/configs/nope_temperature.toml
"$PELAB" sweep $CFG --out "$OUT" --jobs "$JOBS" --no-report
# The unclamped cells join the same directory (their label carries log_length_clamp=false).
"$PELAB" sweep $CFG --out "$OUT" --jobs "$JOBS" --no-report --set 'sweep.attention.scaling=["log_length"]' \
  --set 'sweep.attention.log_length_clamp=[false]'
for enc in none rope; do
  "$PELAB" eval "$OUT/encoding.name=${enc}__attention.scaling=none" --set attention.scaling=log_length \
    --name log_length_at_eval >/dev/null
  "$PELAB" eval "$OUT/encoding.name=${enc}__attention.scaling=none" --set attention.scaling=fixed \
    --set attention.temperature=0.8 --name temperature_0.8_at_eval >/dev/null
done
"$PELAB" report "$OUT"
