#!/usr/bin/env bash
# Training throughput and peak memory of pelab and of the same model in PyTorch, side by side.
# For each configuration (a, b, c) and encoding (none, learned, sinusoidal, rope) it runs
# build/bench/bench_train and bench/bench_torch.py (Debian's python3-torch at /usr/bin/python3), each
# cell in a fresh process, and prints one table with pelab/PyTorch ratios. See bench/README.md.
#
#   scripts/bench.sh [--threads N] [--config a|b|c|all] [--encoding NAME|all] [--steps N] [--warmup N]
#                    [--build-dir DIR] [--json-out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."

threads=1 config=all encoding=all steps="" warmup="" build_dir=build json_out=""
while (($#)); do
  case "$1" in
    --threads|--config|--encoding|--steps|--warmup|--build-dir|--json-out)
      [ $# -ge 2 ] || { echo "bench.sh: $1 needs a value" >&2; exit 2; }
      v=$2
      case "$1" in
        --threads) threads=$v ;; --config) config=$v ;; --encoding) encoding=$v ;;
        --steps) steps=$v ;; --warmup) warmup=$v ;; --build-dir) build_dir=$v ;; --json-out) json_out=$v ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: --threads must be a positive integer, got '$threads'" >&2; exit 2; }
case "$config" in a|b|c) configs=$config ;; all) configs="a b c" ;;
  *) echo "bench.sh: --config must be a, b, c or all, got '$config'" >&2; exit 2 ;; esac
case "$encoding" in none|learned|sinusoidal|rope) encodings=$encoding ;; all) encodings="none learned sinusoidal rope" ;;
  *) echo "bench.sh: --encoding must be none, learned, sinusoidal, rope or all, got '$encoding'" >&2; exit 2 ;; esac
extra=()
[ -n "$steps" ] && extra+=(--steps "$steps")
[ -n "$warmup" ] && extra+=(--warmup "$warmup")

# Build (incremental: nothing to do when up to date).
[ -f "$build_dir/CMakeCache.txt" ] || cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cores=$(getconf _NPROCESSORS_ONLN)  # before OMP_NUM_THREADS is exported: nproc obeys it
cmake --build "$build_dir" --target bench_train -j "$cores" >/dev/null
bench="$build_dir/bench/bench_train"

# Same threading for both, set before either process starts (torch reads it at import).
# OPENBLAS_CORETYPE stays whatever this machine has: both link the same system OpenBLAS.
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE

python=/usr/bin/python3
if torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  have_torch=1
else
  have_torch=0
fi

# Flat JSON from our own two programs: one field's value.
jget() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "pelab training throughput: forward + masked cross-entropy + backward + AdamW + zero_grad"
echo "date:              $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "cpu:               ${cpu:-unknown} ($cores cores online)"
echo "OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-unset (OpenBLAS autodetects)}"
echo "threads:           $threads (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, torch.set_num_threads; OMP_WAIT_POLICY=PASSIVE)"
echo "load average:      $(cut -d' ' -f1-3 /proc/loadavg) (anything well above 0 makes the figures noisy)"
if ((have_torch)); then
  echo "pytorch:           $torch_version ($python)"
else
  echo "PyTorch not available: measuring pelab only ($python -c 'import torch' failed)"
fi
peak_line=$("$bench" --peak-only --json)
peak=$(jget "$peak_line" peak_gflops)
printf 'sgemm peak:        %.1f GFLOP/s (1024^3, one thread, best of 7)\n' "$peak"
[ -n "$json_out" ] && printf '%s\n' "$peak_line" >"$json_out"
echo

fmt='%-3s %-10s | %9s %9s %6s %6s | %8s %8s %6s | %7s %5s\n'
printf "$fmt" cfg encoding "pelab" "torch" "ratio" "cpu" "pelab" "torch" "ratio" "pelab" "util"
printf "$fmt" "" "" "tok/s" "tok/s" "" "ratio" "RSS MB" "RSS MB" "" "GFLOP/s" "%"
rows=()
for c in $configs; do
  for e in $encodings; do
    p=$("$bench" --config "$c" --encoding "$e" --threads "$threads" --peak-gflops "$peak" --json "${extra[@]}")
    [ -n "$json_out" ] && printf '%s\n' "$p" >>"$json_out"
    t=""
    if ((have_torch)); then
      t=$("$python" bench/bench_torch.py --config "$c" --encoding "$e" --threads "$threads" --json "${extra[@]}")
      [ -n "$json_out" ] && printf '%s\n' "$t" >>"$json_out"
    fi
    p_tok=$(jget "$p" tok_s) p_cpu=$(jget "$p" cpu_tok_s) p_rss=$(jget "$p" peak_rss_mb)
    p_gf=$(jget "$p" gflops) p_util=$(jget "$p" util)
    if [ -n "$t" ]; then
      t_tok=$(jget "$t" tok_s) t_cpu=$(jget "$t" cpu_tok_s) t_rss=$(jget "$t" peak_rss_mb)
      read -r r_tok r_cpu r_rss < <(awk -v a="$p_tok" -v b="$t_tok" -v c="$p_cpu" -v d="$t_cpu" -v e="$p_rss" \
        -v f="$t_rss" 'BEGIN { printf "%.2f %.2f %.2f\n", a / b, c / d, e / f }')
      t_tok=$(printf '%.0f' "$t_tok") t_rss=$(printf '%.1f' "$t_rss")
    else
      t_tok=n/a r_tok=n/a r_cpu=n/a t_rss=n/a r_rss=n/a
    fi
    printf "$fmt" "$c" "$e" "$(printf '%.0f' "$p_tok")" "$t_tok" "$r_tok" "$r_cpu" "$(printf '%.1f' "$p_rss")" \
      "$t_rss" "$r_rss" "$(printf '%.2f' "$p_gf")" "$(awk -v u="$p_util" 'BEGIN { printf "%.1f", 100 * u }')"
    rows+=("$c|$e|$p|$t")
  done
done

echo
echo "steady state (memory change across the timed steps, measured after warm-up):"
fmt2='%-3s %-10s %6s | %11s %12s %10s | %11s\n'
printf "$fmt2" cfg encoding steps "pelab dRSS" "new tensor" "heap" "torch dRSS"
printf "$fmt2" "" "" "" "MB" "buffers" "kB" "MB"
for r in "${rows[@]}"; do
  IFS='|' read -r c e p t <<<"$r"
  t_d=n/a
  [ -n "$t" ] && t_d=$(printf '%+.3f' "$(jget "$t" rss_delta_mb)")
  printf "$fmt2" "$c" "$e" "$(jget "$p" steps)" "$(printf '%+.3f' "$(jget "$p" rss_delta_mb)")" \
    "$(jget "$p" tensor_sys_allocs)" "$(printf '%+.1f' "$(jget "$p" heap_delta_kb)")" "$t_d"
done
echo
echo "ratio = pelab/PyTorch tokens/s (> 1: pelab faster), median wall-clock step; cpu ratio: the same from"
echo "process CPU time (insensitive to preemption by other load); RSS = peak resident set of the cell's own"
echo "process (torch's includes ~$( ((have_torch)) && printf '%.0f' "$(jget "$t" rss_base_mb)" || echo '?') MB of library after import); util = model GEMM FLOP/s / sgemm peak."
echo "load average now:  $(cut -d' ' -f1-3 /proc/loadavg)"
