#!/usr/bin/env bash
# Evaluation at every length of a range, as Delétang et al. (2023) evaluate: lengths 1..TO, 64 samples
# each, of a d_model 64, 5-layer model in the autoregressive format on duplicate_string, one thread.
# Trains the model briefly first (--steps), then times `pelab eval --length-range` over the whole range
# (every --step-th length) and over slices of it (where the time goes), and prints the FLOP of each and
# the rate achieved. CPU time (user + system) is the one-core figure; wall time only on a quiet machine.
#   scripts/bench_range_eval.sh [--to N] [--step N] [--samples N] [--steps N] [--slices "1,40 491,500"]
#                               [--build-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
to=500 step=1 samples=64 steps=50 build=build slices=""
while (($#)); do
  case "$1" in
    --to) to=$2; shift 2 ;;
    --step) step=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --slices) slices=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "usage: $0 [--to N] [--samples N] [--steps N] [--slices \"A,B ...\"] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
[ -x "$build/pelab" ] || cmake --build "$build" --target pelab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/range.toml" <<TOML
[model]
d_model = 64
n_layers = 5
n_heads = 4
[encoding]
name = "rope"
[task]
name = "duplicate_string"
min_len = 1
train_len = 40
bos = false
sep = true
eos = "absent"
[train]
steps = $steps
batch_size = 32
threads = 1
log_every = $steps
[eval]
lengths = [40]
samples = $samples
batch_size = 64
TOML
export OPENBLAS_NUM_THREADS=1
echo "range evaluation: duplicate_string (x SEP y, 3n tokens fed), d_model 64, 5 layers, 4 heads, d_ff 256,"
echo "  lengths 1..$to (step $step), $samples samples each, 1 thread, after $steps training steps"
echo "date $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
     "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/pelab" train "$tmp/range.toml" --out "$tmp/run" > "$tmp/train.log" 2>&1 || { tail -5 "$tmp/train.log" >&2; exit 1; }
# FLOP of a forward over one example of n (T = 3n tokens, d = 64, d_ff = 256, 5 layers): the linear
# layers 2 (4 d^2 + 2 d d_ff) T per layer; attention's two T x T products 4 T^2 d in full, as the
# fused core computes them (half of that would be the causal triangle alone).
flop() {  # from to step
  awk -v a="$1" -v b="$2" -v k="$3" -v s="$samples" 'BEGIN {
    d = 64; f = 256; L = 5; lin = 0; att = 0
    for (n = a; n <= b; n += k) { T = 3 * n; lin += 2 * (4 * d * d + 2 * d * f) * T * L; att += 4 * T * T * d * L }
    printf "%.3g %.3g\n", s * lin, s * att }'
}
timed() {  # range -> "wall user system" seconds
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$build/pelab" eval "$tmp/run" --length-range "$1" --samples "$samples" \
    --json "$tmp/out.json" > "$tmp/eval.log" 2>&1 || { tail -5 "$tmp/eval.log" >&2; exit 1; }
  tail -1 "$tmp/time"
}
for r in ${slices:-} "1,$to,$step"; do
  IFS=, read -r a b k <<< "$r"
  read -r wall user sys < <(timed "$r")
  read -r lin att < <(flop "$a" "$b" "${k:-1}")
  awk -v r="$r" -v w="$wall" -v u="$user" -v s="$sys" -v l="$lin" -v a="$att" 'BEGIN {
    printf "  lengths %-11s cpu %7.1f s (user %.1f, system %.1f; wall %.1f)   %.3g FLOP (linear %.3g, attention %.3g)" \
           "   %.1f GFLOP/s\n", r, u + s, u, s, w, l + a, l, a, (l + a) / (u + s) / 1e9 }'
done
echo "  target: 1..500 (step 1) in at most 120 s"
