#!/usr/bin/env bash
# Determinism across thread counts, under every OpenBLAS kernel class this CPU can run and on the
# libxsmm GEMM path ("the same bits at any thread count, on every CPU": docs/performance.md, "Threads").
# For each core type (`gemm = "openblas"`) or `libxsmm` (`gemm = "libxsmm"`) and encoding it trains the same
# small model (copy, d_model 64, 2 layers, batch 32: the plan cuts its GEMMs into 2 pieces) at
# --threads 1 and --threads 2 and compares the final checkpoint's weights and optimizer state byte for
# byte. Not a test: tests never change OPENBLAS_CORETYPE (the ctest suite runs the same comparison
# for 30 steps with the machine's own kernel: tests/experiments/test_threads_determinism.cpp).
#   scripts/check_threads.sh [--steps N] [--coretypes A,B,...] [--encodings A,B,...] [--out DIR]
# Default: 200 steps; the core types of every instruction-set class the CPU supports (SSE: Nehalem, AVX:
# Sandybridge, AVX2: Haswell and Zen, AVX-512: SkylakeX and, with AVX512-BF16, Cooperlake) and libxsmm
# when the build has it (`pelab --version`'s gemm line); every
# encoding `pelab list` shows. Prints one line per (core type, encoding) and a summary; exits 1 if any
# pair differs. PELAB=path/to/pelab (default build/pelab).
set -euo pipefail
cd "$(dirname "$0")/.."
PELAB=${PELAB:-build/pelab}
steps=200 coretypes="" encodings="" out=""
while (($#)); do
  case "$1" in
    --steps) steps=$2 ;; --coretypes) coretypes=$2 ;; --encodings) encodings=$2 ;; --out) out=$2 ;;
    *) echo "check_threads.sh: unknown argument '$1' (allowed: --steps N, --coretypes A,B, --encodings A,B, --out DIR)" >&2
       exit 2 ;;
  esac
  shift 2
done
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || { echo "check_threads.sh: --steps must be a positive integer, got '$steps'" >&2; exit 2; }
[ -x "$PELAB" ] || { echo "check_threads.sh: $PELAB not found: build first (scripts/setup.sh)" >&2; exit 2; }
if [ "$(nproc)" -lt 2 ]; then echo "check_threads.sh: one core here: nothing to compare" >&2; exit 2; fi

if [ -z "$coretypes" ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo)
  has() { [[ " $flags " == *" $1 "* ]]; }
  coretypes="Nehalem"
  has avx && coretypes+=",Sandybridge"
  has avx2 && has fma && coretypes+=",Haswell,Zen"
  has avx512f && has avx512bw && has avx512vl && has avx512dq && coretypes+=",SkylakeX"
  has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx512_bf16 && coretypes+=",Cooperlake"
  PELAB_GEMM= "$PELAB" --version | grep -q '^gemm: libxsmm' && coretypes+=",libxsmm"
fi
[ -n "$encodings" ] || encodings=$("$PELAB" list | awk '/^positional encodings/ {on = 1; next} on && /^[^ ]/ {on = 0}
                                                      on && /^  [a-z]/ {print $1}' | paste -sd, -)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] || out=$tmp
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1
same=0 differ=0 failed=0
echo "check_threads: $steps steps, threads 1 vs 2; core types: $coretypes; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for core in ${coretypes//,/ }; do
  for enc in ${encodings//,/ }; do
    cfg="$out/$core-$enc.toml"
    gemm=openblas run=(env PELAB_GEMM= OPENBLAS_CORETYPE="$core")
    # "libxsmm": libxsmm's GEMMs, and OpenBLAS's kernel (for what libxsmm leaves it) as the environment sets it
    [ "$core" = libxsmm ] && gemm=libxsmm run=(env PELAB_GEMM=)
    printf '[model]\nd_model = 64\nn_layers = 2\nn_heads = 4\n[encoding]\nname = "%s"\n[task]\nname = "copy"\ntrain_len = 16\n[train]\nsteps = %s\nbatch_size = 32\nlog_every = %s\ngemm = "%s"\n[eval]\nlengths = [16, 32]\nsamples = 32\n' \
      "$enc" "$steps" "$steps" "$gemm" >"$cfg"
    ok=1
    for t in 1 2; do
      if ! "${run[@]}" "$PELAB" train "$cfg" --out "$out/$core-$enc-t$t" --threads "$t" --quiet \
           >"$out/$core-$enc-t$t.log" 2>&1; then
        ok=0
      fi
    done
    if ((!ok)); then
      failed=$((failed + 1)); printf '%-12s %-15s FAILED to run (see %s)\n' "$core" "$enc" "$out/$core-$enc-t1.log"; continue
    fi
    kernel=$(grep -o 'kernel [A-Za-z0-9]*' "$out/$core-$enc-t1/train.log" | head -n1 | cut -d' ' -f2)
    c1=$(ls -d "$out/$core-$enc-t1"/checkpoints/step_* | tail -n1) c2=$(ls -d "$out/$core-$enc-t2"/checkpoints/step_* | tail -n1)
    if cmp -s "$c1/weights.safetensors" "$c2/weights.safetensors" && cmp -s "$c1/optimizer.safetensors" "$c2/optimizer.safetensors"; then
      same=$((same + 1)); verdict="bit-identical"
    else
      differ=$((differ + 1)); verdict="DIFFER"
    fi
    printf '%-12s %-15s kernel %-11s %s\n' "$core" "$enc" "${kernel:-?}" "$verdict"
  done
done
echo "check_threads: $same bit-identical, $differ differ, $failed failed to run"
((differ == 0 && failed == 0))
