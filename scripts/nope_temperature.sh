#!/usr/bin/env bash
# issue 10's nope_temperature experiment: the sweep of experiments/configs/nope_temperature.toml (NoPE
# and RoPE x [attention] scaling none / log_length / learned), then the runs trained without scaling
# re-evaluated with log-length scaling at evaluation only, then the report.
#   scripts/nope_temperature.sh [SWEEP_DIR]  (default runs/nope_temperature; PELAB=path/to/pelab)
set -euo pipefail
cd "$(dirname "$0")/.."
PELAB=${PELAB:-build/pelab}
OUT=${1:-runs/nope_temperature}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
"$PELAB" sweep experiments/configs/nope_temperature.toml --out "$OUT" --jobs 1 --no-report
for enc in none rope; do
  "$PELAB" eval "$OUT/encoding.name=${enc}__attention.scaling=none" --set attention.scaling=log_length \
    --name log_length_at_eval >/dev/null
done
"$PELAB" report "$OUT"
