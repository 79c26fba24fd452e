#!/usr/bin/env bash
# Sweep scaling: cells per hour of a sweep of 1-thread cells run with --jobs 1 and with --jobs 2.
# Each cell trains a fixed number of steps (no early stop), so both runs do the same work.
#   scripts/bench_sweep.sh [--cells N] [--steps N] [--build-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
cells=4 steps=400 build=build
while (($#)); do
  case "$1" in
    --cells) cells=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "usage: $0 [--cells N] [--steps N] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
[ -x "$build/pelab" ] || cmake --build "$build" --target pelab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seeds=$(seq -s, 0 $((cells - 1)))
cat > "$tmp/scaling.toml" <<TOML
[model]
d_model = 64
n_layers = 2
n_heads = 4
[encoding]
name = "rope"
[task]
name = "copy"
train_len = 16
[train]
steps = $steps
batch_size = 32
threads = 1
log_every = 100
[eval]
lengths = [16]
samples = 64
[sweep]
"train.seed" = [$seeds]
TOML
echo "sweep scaling: $cells cells x $steps steps (copy, d_model 64, 2 layers), 1 OpenBLAS thread per cell"
echo "date $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
declare -A secs
for jobs in 1 2; do
  start=$(date +%s.%N)
  "$build/pelab" sweep "$tmp/scaling.toml" --out "$tmp/jobs$jobs" --jobs "$jobs" --threads 1 --no-report > "$tmp/log$jobs" 2>&1
  end=$(date +%s.%N)
  secs[$jobs]=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
  awk -v j="$jobs" -v s="${secs[$jobs]}" -v c="$cells" 'BEGIN { printf "  --jobs %d: %6.1f s  %7.1f cells/hour\n", j, s, c * 3600 / s }'
done
awk -v a="${secs[1]}" -v b="${secs[2]}" 'BEGIN { printf "  speed-up of --jobs 2 over --jobs 1: %.2fx (target >= 1.7x)\n", a / b }'
