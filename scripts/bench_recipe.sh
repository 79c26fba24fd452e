#!/usr/bin/env bash
# One training step of each recipe's main cell (experiments/reproduce/NAME.toml: the first cell of its grid),
# pelab (build/bench/bench_recipe) against its PyTorch twin (bench/bench_torch.py --recipe-file, on exactly the
# batches pelab drew), alternately for --rounds rounds, each run a fresh process; per side the min and median
# of the per-round median step times (wall) and the median CPU time, and the ratios PyTorch / pelab. A cell
# without a twin says why (its encoding has no PyTorch twin, a setting the twin does not model). Dropout is
# off on both sides (only deletang has any). Also reached as scripts/bench.sh --recipe NAME|all.
#
#   scripts/bench_recipe.sh [--recipe NAME|all] [--rounds N (>= 3)] [--steps N] [--warmup N] [--threads N]
#                           [--build-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

recipe=all rounds=3 steps=20 warmup=5 threads=1 build_dir=build
while (($#)); do
  case "$1" in
    --recipe|--rounds|--steps|--warmup|--threads|--build-dir)
      [ $# -ge 2 ] || { echo "bench_recipe.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --recipe) recipe=$2 ;; --rounds) rounds=$2 ;; --steps) steps=$2 ;; --warmup) warmup=$2 ;;
        --threads) threads=$2 ;; --build-dir) build_dir=$2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "bench_recipe.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$rounds" "$steps" "$threads"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench_recipe.sh: --rounds, --steps and --threads take positive integers, got '$v'" >&2; exit 2; }
done
[[ $warmup =~ ^[0-9]+$ ]] || { echo "bench_recipe.sh: --warmup takes an integer >= 0, got '$warmup'" >&2; exit 2; }
((rounds >= 3)) || { echo "bench_recipe.sh: --rounds must be >= 3, got $rounds" >&2; exit 2; }
if [ "$recipe" = all ]; then
  recipes=$(ls experiments/reproduce/*.toml | sed 's|.*/||; s|\.toml$||')
else
  [ -f "experiments/reproduce/$recipe.toml" ] || {
    echo "bench_recipe.sh: no recipe '$recipe'; known: $(ls experiments/reproduce/*.toml | sed 's|.*/||; s|\.toml$||' | tr '\n' ' ')all" >&2
    exit 2; }
  recipes=$recipe
fi

[ -f "$build_dir/CMakeCache.txt" ] || cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" --target bench_recipe -j "$(getconf _NPROCESSORS_ONLN)" >/dev/null
bench="$build_dir/bench/bench_recipe"
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE
python=/usr/bin/python3
dump=$(mktemp --suffix=.json)
trap 'rm -f "$dump"' EXIT

jget() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
# min, median and spread ((max - min) / min, in %) of numbers given as arguments.
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.6g %.6g %.0f%%\n", v[1], med, 100 * (v[NR] - v[1]) / v[1] }'; }

echo "recipes' main cells: one training step, pelab vs its PyTorch twin, $rounds rounds alternately"
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC'); machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
echo "threads: $threads; steps $steps timed after $warmup warm-up per run; dropout off; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
fmt='%-12s %-9s %-18s %5s %6s | %9s %9s %9s %5s | %9s %9s %9s %5s | %-13s %5s | %s\n'
printf "$fmt" recipe encoding task B "T" "pelab ms" "" "cpu" "" "torch ms" "" "cpu" "" "ratio" "cpu" "PyTorch twin"
printf "$fmt" "" "" "" "" mean min median median sprd min median median sprd "min / median" ratio ""
for r in $recipes; do
  p_ms=() p_cpu=() t_ms=() t_cpu=() note=""
  for ((i = 1; i <= rounds; i++)); do
    p=$("$bench" --recipe "$r" --steps "$steps" --warmup "$warmup" --threads "$threads" --json --dump "$dump")
    p_ms+=("$(jget "$p" step_ms)") p_cpu+=("$(jget "$p" cpu_ms)")
    t=$("$python" bench/bench_torch.py --recipe-file "$dump" --threads "$threads" $( ((i > 1)) && echo --no-check))
    if [ "$(jget "$t" twin)" = true ]; then
      t_ms+=("$(jget "$t" step_ms)") t_cpu+=("$(jget "$t" cpu_ms)") note="$(jget "$t" variant)"
    else
      note="none: $(printf '%s\n' "$t" | sed -n 's/.*"why":"\([^"]*\)".*/\1/p')"
    fi
  done
  read -r p_min p_med _ < <(stats "${p_ms[@]}")
  read -r _ p_cmed p_csprd < <(stats "${p_cpu[@]}")
  if ((${#t_ms[@]})); then
    read -r t_min t_med _ < <(stats "${t_ms[@]}")
    read -r _ t_cmed t_csprd < <(stats "${t_cpu[@]}")
    ratio=$(awk -v a="$t_min" -v b="$p_min" -v c="$t_med" -v d="$p_med" 'BEGIN { printf "%.2f / %.2f", a / b, c / d }')
    cratio=$(awk -v a="$t_cmed" -v b="$p_cmed" 'BEGIN { printf "%.2f", a / b }')
    t_cols=("$(printf '%.3f' "$t_min")" "$(printf '%.3f' "$t_med")" "$(printf '%.3f' "$t_cmed")" "$t_csprd")
  else
    t_cols=(n/a n/a n/a "") ratio=n/a cratio=n/a
  fi
  printf "$fmt" "$r" "$(jget "$p" encoding)" "$(jget "$p" task)" "$(jget "$p" batch)" \
    "$(printf '%.1f' "$(jget "$p" mean_seq)")" "$(printf '%.3f' "$p_min")" "$(printf '%.3f' "$p_med")" \
    "$(printf '%.3f' "$p_cmed")" "$p_csprd" "${t_cols[@]}" "$ratio" "$cratio" "$note"
done
echo
echo "ms: median step of a run; min / median over the rounds; sprd = (max - min) / min of the runs' CPU times."
echo "ratio = PyTorch / pelab (> 1: pelab faster); cpu"
echo "ratio from the median CPU times. Main cell = the first of the recipe's grid; the batches are the run's own"
echo "(task sample, then [train] positions), drawn before timing and fed to both sides."
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
