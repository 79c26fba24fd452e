#!/usr/bin/env bash
# The rope_extension experiment (docs/results.md, "Length extension"): train
# experiments/configs/rope_extension.toml (RoPE, context L = 64), then re-evaluate the checkpoint with
# every [encoding.rope] scaling method at 2L and 4L (each its own RUN/eval-NAME.json) and report: one
# table row and one loss-by-position curve per method.
#   scripts/rope_extension.sh [RUN_DIR]     (default runs/rope_extension; PELAB=path/to/pelab;
#   THREADS=threads of the training step, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
PELAB=${PELAB:-build/pelab}
OUT=${1:-runs/rope_extension}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
"$PELAB" train experiments/configs/rope_extension.toml --out "$OUT" --quiet --threads "${THREADS:-2}"
ev() { "$PELAB" eval "$OUT" --name "$1" "${@:2}" >/dev/null; echo "eval $1 done"; }
# Static methods with the factor of the target length: s = 4 over 64..256, s = 2 at 128 only.
for m in pi ntk yarn; do
  ev "${m}_x4" --set encoding.rope.scaling=$m --set encoding.rope.factor=4
  ev "${m}_x2" --set encoding.rope.scaling=$m --set encoding.rope.factor=2 --lengths 128
done
# YaRN's default ramp (alpha 1, beta 32 rotations per L) assumes L in the thousands: at L = 64 the highest
# frequency turns only ~10 times, so even it is mostly interpolated. A ramp scaled to this context:
ev yarn_x4_beta4 --set encoding.rope.scaling=yarn --set encoding.rope.factor=4 --set encoding.rope.yarn_beta=4
# Dynamic NTK picks its factor from each forward's length (n / L with factor 1, as Hugging Face).
ev dynamic_ntk --set encoding.rope.scaling=dynamic_ntk --set encoding.rope.factor=1
"$PELAB" report "$OUT"
