#!/usr/bin/env bash
# Training throughput and peak memory of pelab and of the same model in PyTorch, measured alternately.
# For each configuration (a, b, c; d: the deletang recipe's shape, mixed sizes, bidirectional) and encoding (none, learned, sinusoidal, rope, alibi, t5, shaw, fire,
# kerple, xpos, cope) it runs
# build/bench/bench_train and bench/bench_torch.py (Debian's python3-torch at /usr/bin/python3) in turn,
# pelab, PyTorch, pelab, PyTorch, ... for --rounds rounds (each run a fresh process), and prints per side
# the min and median of the per-round median step times, the ratios of the minima and of the medians,
# and "noisy: rerun" instead of a ratio when a side's round medians spread by more than 10%; then, per
# config with rope in the run, pelab's step time of every encoding relative to rope's (the relative
# encodings' speed bound: t5, fire, kerple, xpos, cope at most 1.3x, shaw at most 1.6x; the frontier
# methods at most 1.5x, path and dape 3x; the last measurement is in docs/performance.md). The frontier
# methods (--encoding frontier: fox, stick_breaking, selective, dape, dynamic_bias, path, pope, hope, fope,
# transformer_xl, grape_m, grape_a, rope+ssmax (SSMax as rope's [attention] scaling), rope+qk_norm, rope+canon
# and none+canon (QK-norm, Canon layers at ABCD: issue 46), rope+chunk, none+tuning and rope+variant (issue 46's
# layouts: bench/bench_train.cpp)) have no fast PyTorch twin in
# bench_torch.py: pelab's side only, against rope. `all` is both lists. See bench/README.md.
# --recipe NAME|all runs scripts/bench_recipe.sh instead: one step of each recipe's main cell against its
# PyTorch twin (the other arguments go with it).
#
#   scripts/bench.sh [--threads N] [--config a|b|c|d|all] [--encoding NAME[,NAME...]|all|frontier] [--rounds N (>= 3)]
#                    [--steps N] [--warmup N] [--variant V] [--build-dir DIR] [--json-out FILE]
#                    [--torch-coretype K]
# PyTorch's OpenBLAS kernel: --torch-coretype K, else pelab's when pelab's GEMMs are OpenBLAS's
# (PELAB_GEMM=openblas), else OpenBLAS's own pick for the CPU (OPENBLAS_CORETYPE unset for PyTorch):
# pelab's libxsmm path uses the CPU's widest vectors, so PyTorch gets its fastest kernel too.
set -euo pipefail
cd "$(dirname "$0")/.."

for a in "$@"; do [ "$a" = --recipe ] && exec scripts/bench_recipe.sh "$@"; done
threads=1 config=all encoding=all rounds=3 steps="" warmup="" variant=best build_dir=build json_out="" torch_core=""
while (($#)); do
  case "$1" in
    --threads|--config|--encoding|--rounds|--steps|--warmup|--variant|--build-dir|--json-out|--torch-coretype)
      [ $# -ge 2 ] || { echo "bench.sh: $1 needs a value" >&2; exit 2; }
      v=$2
      case "$1" in
        --threads) threads=$v ;; --config) config=$v ;; --encoding) encoding=$v ;; --rounds) rounds=$v ;;
        --steps) steps=$v ;; --warmup) warmup=$v ;; --variant) variant=$v ;; --build-dir) build_dir=$v ;;
        --json-out) json_out=$v ;; --torch-coretype) torch_core=$v ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: --threads must be a positive integer, got '$threads'" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ ]] && ((rounds >= 3)) || { echo "bench.sh: --rounds must be an integer >= 3, got '$rounds'" >&2; exit 2; }
case "$config" in a|b|c|d) configs=$config ;; all) configs="a b c d" ;;
  *) echo "bench.sh: --config must be a, b, c, d or all, got '$config'" >&2; exit 2 ;; esac
torch_encodings="none learned sinusoidal rope alibi t5 shaw fire kerple xpos cope"  # bench_torch.py has these
frontier_encodings="fox stick_breaking selective dape dynamic_bias path pope hope fope transformer_xl grape_m grape_a rope+ssmax rope+qk_norm rope+canon none+canon rope+chunk none+tuning rope+variant"
all_encodings="$torch_encodings $frontier_encodings"
case "$encoding" in
  all) encodings=$all_encodings ;;
  frontier) encodings="rope $frontier_encodings" ;;
  *)
    encodings=${encoding//,/ }
    for e in $encodings; do
      [[ " $all_encodings " == *" $e "* ]] ||
        { echo "bench.sh: --encoding takes all, frontier or a comma-separated list of: ${all_encodings// /, }; got '$e'" >&2; exit 2; }
    done ;;
esac
case "$variant" in ref|eager|script|trace|eager_avx512|script_avx512|best) ;;
  *) echo "bench.sh: --variant must be ref, eager, script, trace, eager_avx512, script_avx512 or best, got '$variant'" >&2; exit 2 ;; esac
[[ -z $torch_core || $torch_core =~ ^[A-Za-z0-9]+$ ]] ||
  { echo "bench.sh: --torch-coretype takes an OpenBLAS core name (Haswell, SkylakeX, Cooperlake, ...), got '$torch_core'" >&2; exit 2; }
extra=()
[ -n "$steps" ] && extra+=(--steps "$steps")
[ -n "$warmup" ] && extra+=(--warmup "$warmup")

# Build (incremental: nothing to do when up to date).
[ -f "$build_dir/CMakeCache.txt" ] || cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cores=$(getconf _NPROCESSORS_ONLN)  # before OMP_NUM_THREADS is exported: nproc obeys it
cmake --build "$build_dir" --target bench_train -j "$cores" >/dev/null
bench="$build_dir/bench/bench_train"

# Same threading for both, set before either process starts (torch reads it at import).
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE

python=/usr/bin/python3
if torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  have_torch=1
else
  have_torch=0
fi

# Flat JSON from our own two programs: one field's value (numbers and simple strings).
jget() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
# min, median and spread ((max - min) / min) of numbers given as arguments.
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.6g %.6g %.6g\n", v[1], med, (v[NR] - v[1]) / v[1] }'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
noise_limit=0.10

# The kernel pelab runs with (bench_train selects it as pelab does) is exported so that PyTorch, which links
# the same OpenBLAS, runs the same one.
peak_line=$("$bench" --peak-only --json)
peak=$(jget "$peak_line" peak_gflops)
path_peak=$(jget "$peak_line" path_peak_gflops)
gemm_path=$(printf '%s\n' "$peak_line" | sed -n 's/.*"gemm_path":"\([^"]*\)".*/\1/p')
core=$(jget "$peak_line" blas_core)
core_origin=$(printf '%s\n' "$peak_line" | sed -n 's/.*"blas_core_origin":"\([^"]*\)".*/\1/p')
export OPENBLAS_CORETYPE=$core
# pelab's own GEMMs need not be OpenBLAS's (PELAB_GEMM, core/blas.hpp): then PyTorch gets OpenBLAS's own pick.
if [ -n "$torch_core" ]; then
  torch_env=(env "OPENBLAS_CORETYPE=$torch_core") torch_says="$torch_core (--torch-coretype)"
elif [[ $gemm_path == OpenBLAS* ]]; then
  torch_env=(env "OPENBLAS_CORETYPE=$core") torch_says="$core (the same kernel as pelab's GEMMs)"
else
  torch_env=(env -u OPENBLAS_CORETYPE)
  picked=$("${torch_env[@]}" /usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0")
l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())' 2>/dev/null || echo unknown)
  torch_says="$picked (OpenBLAS's own pick: pelab's GEMMs are not OpenBLAS's)"
fi
[ -n "$json_out" ] && printf '%s\n' "$peak_line" >"$json_out"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
load_before=$(loadavg)
echo "pelab vs PyTorch training throughput: forward + loss + backward + AdamW + zero_grad"
echo "date:           $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:        ${cpu:-unknown CPU}, $cores cores online, $(uname -sr)"
echo "OpenBLAS core:  $core ($core_origin) for pelab's OpenBLAS; PyTorch's: $torch_says"
echo "threads:        $threads (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, torch.set_num_threads; OMP_WAIT_POLICY=PASSIVE)"
if ((have_torch)); then
  best=$("$python" -c 'import sys; sys.path.insert(0, "bench"); import bench_torch as b
print(", ".join(f"{c}: {v}" for c, v in b.BEST.items()))')
  [ "$variant" = best ] && variant_says="best ($best)" || variant_says=$variant
  echo "pytorch:        $torch_version ($python), variant $variant_says (bench/bench_torch.py)"
else
  echo "PyTorch not available: measuring pelab only ($python -c 'import torch' failed)"
fi
printf 'sgemm peak:     %.1f GFLOP/s (OpenBLAS, 1024^3, one thread, best of 7)\n' "$peak"
printf 'pelab GEMMs:    %s (PELAB_GEMM=%s; openblas: every GEMM in OpenBLAS); its 1024^3 peak %.1f GFLOP/s\n' \
  "$gemm_path" "${PELAB_GEMM:-default}" "$path_peak"
echo "rounds:         $rounds per cell, pelab and PyTorch alternately, each run a fresh process"
echo "load average:   $load_before (before)"
echo

fmt='%-3s %-14s | %8s %8s %5s | %8s %8s %5s | %-16s %-12s | %7s %7s\n'
printf "$fmt" cfg encoding "pelab ms" "" "" "torch ms" "" "" "speed ratio" "cpu ratio" "pelab" "torch"
printf "$fmt" "" "" min median sprd min median sprd "min / median" median "tok/s" "tok/s"
rows=()
for c in $configs; do
  for e in $encodings; do
    p_ms=() p_cpu=() t_ms=() t_cpu=() p_last="" t_last="" p_rss=0 t_rss=0 p_alloc=0 p_heap=0 p_drss=0 t_drss=0 check=""
    for ((r = 1; r <= rounds; r++)); do
      p=$("$bench" --config "$c" --encoding "$e" --threads "$threads" --peak-gflops "$peak" \
        --path-peak-gflops "$path_peak" --json "${extra[@]}")
      [ -n "$json_out" ] && printf '%s\n' "$p" >>"$json_out"
      p_ms+=("$(jget "$p" step_ms)") p_cpu+=("$(jget "$p" cpu_ms)") p_last=$p
      # Worst over the rounds: peak RSS, tensor buffers obtained from the system, heap and RSS growth.
      read -r p_rss p_alloc p_heap p_drss < <(awk -v a="$p_rss" -v b="$(jget "$p" peak_rss_mb)" -v c="$p_alloc" \
        -v d="$(jget "$p" tensor_sys_allocs)" -v e="$p_heap" -v f="$(jget "$p" heap_delta_kb)" -v g="$p_drss" \
        -v h="$(jget "$p" rss_delta_mb)" 'function mx(x, y) { return x > y ? x : y }
        BEGIN { print mx(a, b), mx(c, d), mx(e, f), mx(g, h) }')
      if ((have_torch)) && [[ " $torch_encodings " == *" $e "* ]]; then
        check_flag=(--no-check)
        ((r == 1)) && check_flag=()  # the fast path is checked against pelab_ref once per cell
        t=$("${torch_env[@]}" "$python" bench/bench_torch.py --config "$c" --encoding "$e" --threads "$threads" --variant "$variant" \
          --json "${check_flag[@]}" "${extra[@]}")
        [ -n "$json_out" ] && printf '%s\n' "$t" >>"$json_out"
        t_ms+=("$(jget "$t" step_ms)") t_cpu+=("$(jget "$t" cpu_ms)") t_last=$t
        # (d): both sides must have timed the same sequence of sizes (bench_train's and bench_torch.py's mixed_sizes)
        [ "$(jget "$p" tokens_per_step)" = "$(printf '%.1f' "$(jget "$t" tokens_per_step)")" ] || {
          echo "bench.sh: config $c: pelab timed $(jget "$p" tokens_per_step) tokens a step, PyTorch $(jget "$t" tokens_per_step): not the same sizes" >&2
          exit 1; }
        ((r == 1)) && check=$(printf '%s\n' "$t" | sed -n 's/.*"check":"\([^"]*\)".*/\1/p')
        read -r t_rss t_drss < <(awk -v a="$t_rss" -v b="$(jget "$t" peak_rss_mb)" -v c="$t_drss" \
          -v d="$(jget "$t" rss_delta_mb)" 'function mx(x, y) { return x > y ? x : y } BEGIN { print mx(a, b), mx(c, d) }')
      fi
    done
    read -r p_min p_med p_spread < <(stats "${p_ms[@]}")
    read -r _ p_cmed p_cspread < <(stats "${p_cpu[@]}")
    N=$(jget "$p_last" tokens_per_step)  # B x T; (d): B x its mean T
    if ((${#t_ms[@]})); then
      read -r t_min t_med t_spread < <(stats "${t_ms[@]}")
      read -r _ t_cmed t_cspread < <(stats "${t_cpu[@]}")
      read -r ratio cratio < <(awk -v pm="$p_min" -v pd="$p_med" -v ps="$p_spread" -v tm="$t_min" -v td="$t_med" \
        -v ts="$t_spread" -v pc="$p_cmed" -v pcs="$p_cspread" -v tc="$t_cmed" -v tcs="$t_cspread" -v lim="$noise_limit" \
        'BEGIN { r = (ps > lim || ts > lim) ? "noisy:_rerun" : sprintf("%.2f_/_%.2f", tm / pm, td / pd)
                 q = (pcs > lim || tcs > lim) ? "noisy:_rerun" : sprintf("%.2f", tc / pc); print r, q }')
      t_cols=("$(printf '%.3f' "$t_min")" "$(printf '%.3f' "$t_med")" "$(awk -v s="$t_spread" 'BEGIN { printf "%.0f%%", 100 * s }')")
      t_tok=$(awk -v m="$t_med" -v n="$N" 'BEGIN { printf "%.0f", n / m * 1000 }')
    else
      t_cols=(n/a n/a "") ratio=n/a cratio=n/a t_tok=n/a
    fi
    printf "$fmt" "$c" "$e" "$(printf '%.3f' "$p_min")" "$(printf '%.3f' "$p_med")" \
      "$(awk -v s="$p_spread" 'BEGIN { printf "%.0f%%", 100 * s }')" "${t_cols[@]}" "${ratio//_/ }" "${cratio//_/ }" \
      "$(awk -v m="$p_med" -v n="$N" 'BEGIN { printf "%.0f", n / m * 1000 }')" "$t_tok"
    rows+=("$c|$e|$p_last|$p_rss|$p_alloc|$p_heap|$p_drss|$t_rss|$t_drss|$p_med|$check|$(jget "$t_last" variant)|$p_cmed|$p_cspread|$p_spread")
  done
done
load_after=$(loadavg)
# The peaks again after the cells: on a shared host one 1024^3 sample moves by about 20% from minute to
# minute, so the util columns divide by the larger of the two (the conservative reading of a fraction).
# A failed measurement keeps the start's peaks rather than lose the tables below.
peak_end_line=$("$bench" --peak-only --json) || peak_end_line=""
peak_end=$(jget "$peak_end_line" peak_gflops) path_peak_end=$(jget "$peak_end_line" path_peak_gflops)
[ -n "$peak_end" ] || peak_end=$peak
[ -n "$path_peak_end" ] || path_peak_end=$path_peak
[ -n "$json_out" ] && [ -n "$peak_end_line" ] && printf '%s\n' "$peak_end_line" >>"$json_out"
peak_start=$peak path_peak_start=$path_peak
peak=$(awk -v a="$peak" -v b="$peak_end" 'BEGIN { print (a > b ? a : b) }')
path_peak=$(awk -v a="$path_peak" -v b="$path_peak_end" 'BEGIN { print (a > b ? a : b) }')

echo
echo "memory (worst over the rounds; peak RSS of the cell's own process) and pelab's GEMM throughput at its median step:"
fmt2='%-3s %-14s | %8s %8s %5s | %6s %10s %8s %8s | %8s | %7s %5s %5s\n'
printf "$fmt2" cfg encoding "pelab" "torch" "ratio" "steps" "new tensor" "heap" "pelab" "torch" "pelab" "util" "path"
printf "$fmt2" "" "" "RSS MB" "RSS MB" "" "" "buffers" "kB" "dRSS MB" "dRSS MB" "GFLOP/s" "%" "%"
for row in "${rows[@]}"; do
  IFS='|' read -r c e p p_rss p_alloc p_heap p_drss t_rss t_drss p_med _ t_var _ _ _ <<<"$row"
  gf=$(awk -v f="$(jget "$p" flops_per_step)" -v m="$p_med" 'BEGIN { printf "%.2f", f / m / 1e6 }')
  util=$(awk -v g="$gf" -v pk="$peak" 'BEGIN { printf "%.1f", 100 * g / pk }')
  putil=$(awk -v g="$gf" -v pk="$path_peak" 'BEGIN { printf "%.1f", 100 * g / pk }')
  if [ -n "$t_var" ]; then  # PyTorch ran this cell
    t_r=$(printf '%.1f' "$t_rss") r_r=$(awk -v a="$p_rss" -v b="$t_rss" 'BEGIN { printf "%.2f", a / b }')
    t_d=$(printf '%+.3f' "$t_drss")
  else
    t_r=n/a r_r=n/a t_d=n/a
  fi
  printf "$fmt2" "$c" "$e" "$(printf '%.1f' "$p_rss")" "$t_r" "$r_r" "$(jget "$p" steps)" "$p_alloc" \
    "$(printf '%+.1f' "$p_heap")" "$(printf '%+.3f' "$p_drss")" "$t_d" "$gf" "$util" "$putil"
done
# Each encoding against rope, pelab side, same config of the same run (medians of the per-run medians).
if [[ " $encodings " == *" rope "* ]] && [ "$encodings" != rope ]; then
  echo
  echo "pelab step time relative to rope (same config, same run): wall and CPU medians; bound 1.3x, shaw 1.6x, frontier 1.5x, path and dape 3x"
  fmt3='%-3s %-14s | %9s %9s | %9s %9s | %-6s %s\n'
  printf "$fmt3" cfg encoding "wall ms" "vs rope" "cpu ms" "vs rope" bound verdict
  for row in "${rows[@]}"; do
    IFS='|' read -r c e _ _ _ _ _ _ _ p_med _ _ p_cmed p_cspread p_spread <<<"$row"
    rope_row=""
    for r2 in "${rows[@]}"; do [[ $r2 == "$c|rope|"* ]] && rope_row=$r2; done
    IFS='|' read -r _ _ _ _ _ _ _ _ _ r_med _ _ r_cmed r_cspread r_spread <<<"$rope_row"
    case "$e" in
      shaw) bound=1.6 ;; t5|fire|kerple|xpos|cope) bound=1.3 ;; path|dape) bound=3.0 ;;
      fox|stick_breaking|selective|dynamic_bias|pope|hope|fope|transformer_xl|grape_m|grape_a|rope+ssmax|rope+qk_norm|rope+canon|none+canon|rope+chunk|none+tuning|rope+variant) bound=1.5 ;; *) bound="" ;;
    esac
    printf "$fmt3" "$c" "$e" "$(printf '%.3f' "$p_med")" \
      "$(awk -v a="$p_med" -v b="$r_med" -v s="$p_spread" -v t="$r_spread" -v l="$noise_limit" \
         'BEGIN { if (s > l || t > l) print "noisy"; else printf "%.2f", a / b }')" \
      "$(printf '%.3f' "$p_cmed")" \
      "$(awk -v a="$p_cmed" -v b="$r_cmed" -v s="$p_cspread" -v t="$r_cspread" -v l="$noise_limit" \
         'BEGIN { if (s > l || t > l) print "noisy"; else printf "%.2f", a / b }')" \
      "${bound:--}" \
      "$(awk -v a="$p_cmed" -v b="$r_cmed" -v m="$bound" -v s="$p_cspread" -v t="$r_cspread" -v l="$noise_limit" \
         'BEGIN { if (m == "") print ""; else if (s > l || t > l) print "noisy: rerun";
                  else if (a / b <= m + 0) print "within (cpu)"; else print "OVER (cpu)" }')"
  done
fi
if ((have_torch)); then
  echo
  echo "PyTorch side, checked once per cell against tests/pytorch/pelab_ref.py before timing:"
  for row in "${rows[@]}"; do
    IFS='|' read -r c e _ _ _ _ _ _ _ _ check v _ _ _ <<<"$row"
    if [[ " $torch_encodings " == *" $e "* ]]; then
      printf '%-3s %-14s %-6s %s\n' "$c" "$e" "$v" "${check:-(variant ref: pelab_ref itself)}"
    else
      printf '%-3s %-14s %-6s %s\n' "$c" "$e" "-" "(pelab only: no PyTorch twin in bench_torch.py)"
    fi
  done
fi
echo
echo "(d): a run's step is the MEAN over its fixed sequence of problem sizes (the same on both sides), not a median."
echo "ms = median step time of one run; min / median over the $rounds runs of each side; sprd = (max - min) / min"
echo "of those. speed ratio = PyTorch time / pelab time (> 1: pelab faster) from the minima and from the medians;"
echo "cpu ratio the same from median process CPU time (insensitive to preemption). A ratio is printed only when"
echo "both sides' run medians spread by at most $(awk -v l="$noise_limit" 'BEGIN { printf "%.0f", 100 * l }')%. new tensor buffers = buffers pelab's caching allocator had to get"
echo "from the system during the timed steps (0: steady state allocates nothing); heap = change in glibc heap in"
echo "use, dRSS = change in resident memory over the timed steps (torch's fast variants keep freed buffers in the"
echo "heap, so theirs settles after a few steps); torch's RSS includes ~230 MB of library. util = model"
echo "FLOP/s (forward + backward by formula) / OpenBLAS's sgemm peak; path = the same / the 1024^3 peak of pelab's"
echo "GEMM path (libxsmm's AVX-512 kernels exceed OpenBLAS's AVX2 Haswell peak, so util can exceed 100%; so can a"
echo "peak measured under load). Each peak is the larger of its measurements before and after the cells:"
printf 'OpenBLAS %.1f and %.1f GFLOP/s, the path %.1f and %.1f GFLOP/s.\n' "$peak_start" "$peak_end" "$path_peak_start" "$path_peak_end"
echo "load average:   $load_before (before), $load_after (after)"
