#!/usr/bin/env bash
# MPI scaling on this machine (bench/README.md, "Data parallel and sweeps over MPI"):
#  1. data-parallel training of bench config (c) (d_model 256, 4 layers, 8 heads, global batch 16,
#     sequence 128, vocabulary 20: the copy task with 16 symbols at n = 63) through the real
#     `pelab train`: tokens/s at np=1 and np=2 (1 OpenBLAS thread per rank), np=1 with 2 threads for
#     reference, and the allreduce time per step (train.log);
#  2. sweep throughput: cells/hour of `pelab sweep` (np=1) and `mpirun -np 2 pelab sweep`.
#   scripts/bench_mpi.sh [--steps N] [--rounds N] [--cells N] [--cell-steps N] [--build-dir DIR]
# tokens/s is the median over a run's log intervals after the first (warm-up); each setting runs
# --rounds times, alternating, and the median of those is printed. Needs an MPI build (mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=40 rounds=2 cells=4 cell_steps=400 build=build
while (($#)); do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    --cell-steps) cell_steps=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "usage: $0 [--steps N] [--rounds N] [--cells N] [--cell-steps N] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
[ -x "$build/pelab" ] || cmake --build "$build" --target pelab
if ! "$build/pelab" --version | grep -q "MPI: built in"; then
  echo "bench_mpi: $build/pelab was built without MPI (scripts/setup.sh installs Open MPI; rebuild)" >&2
  exit 2
fi
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log_every=$((steps / 4))
cat > "$tmp/c.toml" <<TOML
[model]
d_model = 256
n_layers = 4
n_heads = 8
[encoding]
name = "rope"
[task]
name = "copy"
train_len = 63
min_len = 63
[task.copy]
symbols = 16
[train]
steps = $steps
batch_size = 16
threads = 1
log_every = $log_every
[eval]
lengths = [63]
samples = 16
TOML

echo "MPI scaling, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "1. data-parallel training, config (c): $steps steps x global batch 16 x 128 tokens, $rounds rounds"
# median tokens/s over the log intervals after the first
tps() { /usr/bin/python3 -c '
import json, statistics, sys
v = [json.loads(l)["tokens_per_s"] for l in open(sys.argv[1]) if "\"train\"" in l]
print(statistics.median(v[1:] if len(v) > 1 else v))' "$1/metrics.jsonl"; }
declare -A runs
for r in $(seq "$rounds"); do
  for setting in np1 np2 np1t2; do
    out="$tmp/$setting-$r"
    case $setting in
      np1) "$build/pelab" train "$tmp/c.toml" --out "$out" --quiet ;;
      np1t2) "$build/pelab" train "$tmp/c.toml" --out "$out" --quiet --threads 2 ;;
      np2) "${mpirun[@]}" -np 2 "$build/pelab" train "$tmp/c.toml" --out "$out" --quiet ;;
    esac
    runs[$setting]+="$(tps "$out") "
  done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
np1=$(echo "${runs[np1]}" | med) np2=$(echo "${runs[np2]}" | med) np1t2=$(echo "${runs[np1t2]}" | med)
printf "  %-32s %9.0f tok/s   (runs: %s)\n" "np=1, 1 thread" "$np1" "${runs[np1]}"
printf "  %-32s %9.0f tok/s   (runs: %s)\n" "np=2, 1 thread per rank" "$np2" "${runs[np2]}"
printf "  %-32s %9.0f tok/s   (runs: %s)\n" "np=1, 2 threads (reference)" "$np1t2" "${runs[np1t2]}"
awk -v a="$np1" -v b="$np2" -v c="$np1t2" 'BEGIN { printf "  speed-up np=2 over np=1: %.2fx (goal >= 1.7x); np=1 with 2 threads: %.2fx\n", b / a, c / a }'
for r in $(seq "$rounds"); do
  echo "  round $r: $(grep -o 'data parallel: .*' "$tmp/np2-$r/train.log")"
done
echo "  (the trainer's allreduce time includes waiting for the slower rank; the allreduce alone:)"
[ -x "$build/bench/bench_allreduce" ] || cmake --build "$build" --target bench_allreduce > /dev/null
"${mpirun[@]}" -np 2 "$build/bench/bench_allreduce" --reps 30 | sed 's/^/  /'

echo
echo "2. sweep throughput: $cells cells x $cell_steps steps (copy, d_model 64, 2 layers), 1 thread per cell"
seeds=$(seq -s, 0 $((cells - 1)))
cat > "$tmp/sweep.toml" <<TOML
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
steps = $cell_steps
batch_size = 32
threads = 1
log_every = 100
[eval]
lengths = [16]
samples = 64
[sweep]
"train.seed" = [$seeds]
TOML
declare -A secs
for np in 1 2; do
  start=$(date +%s.%N)
  if [ "$np" = 1 ]; then
    "$build/pelab" sweep "$tmp/sweep.toml" --out "$tmp/sweep$np" --no-report > "$tmp/sweeplog$np" 2>&1
  else
    "${mpirun[@]}" -np "$np" "$build/pelab" sweep "$tmp/sweep.toml" --out "$tmp/sweep$np" --no-report > "$tmp/sweeplog$np" 2>&1
  fi
  end=$(date +%s.%N)
  secs[$np]=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
  awk -v n="$np" -v s="${secs[$np]}" -v c="$cells" 'BEGIN { printf "  np=%d: %6.1f s  %7.1f cells/hour  (%.1f s per cell per rank)\n", n, s, c * 3600 / s, s * n / c }'
done
awk -v a="${secs[1]}" -v b="${secs[2]}" 'BEGIN { printf "  speed-up np=2 over np=1: %.2fx\n", a / b }'
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)  (a shared machine: figures are noisy)"
