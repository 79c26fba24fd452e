#!/usr/bin/env bash
# Long contexts: time and peak memory of `pelab eval` at lengths up to 16384 characters, and of training
# steps at growing contexts, for a char_lm model (d_model 64, 2 layers, 4 heads, trained at context 64:
# experiments/configs/char_lm.toml's shape) on Debian's `fortunes` corpus (2.6 MB,
# /usr/share/games/fortunes read as one text), one thread. The model is trained for a few steps only:
# time and memory do not depend on what it learned. CPU time (user + system) is the one-core figure;
# wall time only on a quiet machine. Peak RSS is GNU time's maximum resident set size.
#   scripts/bench_long_context.sh [--encodings none,alibi] [--eval-lengths 1024,4096,16384] [--samples N]
#                                 [--train-lengths 128,512,2048] [--train-batch N] [--build-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
encodings=none,alibi,t5,fire eval_lengths=1024,2048,4096,8192,16384 samples=64
train_lengths=128,512,1024,2048 train_batch=8 build=build
while (($#)); do
  case "$1" in
    --encodings) encodings=$2; shift 2 ;;
    --eval-lengths) eval_lengths=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --train-lengths) train_lengths=$2; shift 2 ;;
    --train-batch) train_batch=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "usage: $0 [--encodings A,B] [--eval-lengths N,M] [--samples N] [--train-lengths N,M] [--train-batch N] [--build-dir DIR]" >&2
       exit 2 ;;
  esac
done
corpus=/usr/share/games/fortunes
[ -d "$corpus" ] || { echo "$0: $corpus is missing: apt-get install fortunes" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "$0: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }
[ -x "$build/pelab" ] || cmake --build "$build" --target pelab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
config() {  # encoding train_len batch steps
  cat <<TOML
[model]
d_model = 64
n_layers = 2
n_heads = 4
emb_init_std = 0.2
[encoding]
name = "$1"
[task]
name = "char_lm"
min_len = $2
train_len = $2
[task.char_lm]
path = "$corpus"
holdout = 0.1
[train]
steps = $4
batch_size = $3
warmup = 1
threads = 1
log_every = $4
[eval]
lengths = [$2]
samples = 8
TOML
}
measure() {  # label command... -> "label  cpu s  wall s  peak MB"
  local label=$1; shift
  if /usr/bin/time -f "%U %S %e %M" -o "$tmp/time" "$@" > "$tmp/out" 2>&1; then
    read -r user sys wall rss < "$tmp/time"
    awk -v l="$label" -v u="$user" -v s="$sys" -v w="$wall" -v r="$rss" \
      'BEGIN { printf "  %-28s cpu %8.2f s   wall %8.2f s   peak RSS %8.0f MB\n", l, u + s, w, r / 1024 }'
  else
    echo "  $label: refused or failed: $(grep -m1 -iE 'error|needs about' "$tmp/out" || tail -1 "$tmp/out")"
  fi
}
echo "long contexts: char_lm d_model 64, 2 layers, 4 heads, trained at context 64; corpus $corpus (one text)"
echo "date $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
     "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, build $build ($("$build/pelab" --version 2>/dev/null | head -1 || echo '?')), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "evaluation: pelab eval RUN --lengths L --samples $samples, 1 thread"
for enc in ${encodings//,/ }; do
  config "$enc" 64 32 20 > "$tmp/$enc.toml"
  "$build/pelab" train "$tmp/$enc.toml" --out "$tmp/$enc" --quiet > "$tmp/train.log" 2>&1 ||
    { tail -5 "$tmp/train.log" >&2; exit 1; }
  for L in ${eval_lengths//,/ }; do
    measure "$enc eval L=$L" "$build/pelab" eval "$tmp/$enc" --lengths "$L" --samples "$samples" --memory-limit 0
  done
done
echo "training: $train_batch sequences of context L, 3 steps (one held-out evaluation at L, 8 samples), 1 thread"
for enc in ${encodings//,/ }; do
  for L in ${train_lengths//,/ }; do
    config "$enc" "$L" "$train_batch" 3 > "$tmp/train_$enc.toml"
    rm -rf "$tmp/t_$enc"
    measure "$enc train L=$L" "$build/pelab" train "$tmp/train_$enc.toml" --out "$tmp/t_$enc" --quiet
  done
done
