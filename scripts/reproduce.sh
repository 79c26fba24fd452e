#!/usr/bin/env bash
# reproduce.sh NAME [--quick] [--jobs N] [--page-only | --rules-only]: run the reproduction recipe
# experiments/reproduce/NAME.toml with `pelab sweep` (--jobs 2 by default; a re-run resumes), then write its result
# page (the paper's numbers beside pelab's, a verdict computed from them, its stability over the seeds and the
# provenance) to RUN_DIR/RESULT.md, and to experiments/results/reproduce/STEM.md with the seed-level results beside
# it (STEM.results.csv, STEM.runs.csv: per run the steps used, the validation value and the held-out curve,
# STEM.provenance.json; STEM = NAME or NAME.quick).
#   --quick       the recipe's smaller variant (the `# reproduce.quick:` overrides in its header), in
#                 runs/reproduce/NAME-quick; the page says it is the quick variant and what it changes
#   --page-only   do not train: write the page from an existing run directory, which must be the recipe's sweep
#                 (its sweep.toml has the recipe's settings with the variant's and arm's overrides)
#   --rules-only  do not train or read a run directory: write the page again from the committed STEM.results.csv
#                 (a change of the verdict rules regenerates every page this way)
# A recipe whose header has `# reproduce.arm: ARM [--set ...]` lines runs its sweep once per arm, with that
# arm's overrides, into RUN_DIR/ARM. The rules and the page are the Python module pelab.reproduce (standard
# library only: python/pelab/reproduce/). Environment: PELAB (binary, default build/pelab), REPRODUCE_OUT (run
# directory), REPRODUCE_RESULTS (where the page copy goes, default experiments/results/reproduce).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
recipes_dir="$root/experiments/reproduce"
known=$(cd "$recipes_dir" && ls ./*.toml 2>/dev/null | sed 's|^\./||; s|\.toml$||' | tr '\n' ' ')
usage() { echo "usage: scripts/reproduce.sh NAME [--quick] [--jobs N] [--page-only | --rules-only]; NAME is one of: $known" >&2; exit 2; }
fail() { echo "error: $*" >&2; exit 2; }

[ $# -ge 1 ] || usage
name=$1; shift
case "$name" in -h|--help) usage ;; esac
config="$recipes_dir/$name.toml"
[[ "$name" =~ ^[a-z0-9_]+$ ]] && [ -f "$config" ] || fail "unknown recipe '$name'; known recipes (experiments/reproduce/*.toml): $known"
quick=0; jobs=2; mode=train
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --page-only|--rules-only) [ $mode = train ] || fail "--page-only and --rules-only exclude each other"; mode=${1#--} ;;
    --jobs) [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] && [ "$2" -le 256 ] || fail "--jobs needs an integer from 1 to 256 (pelab sweep's range)"
            jobs=$2; shift ;;
    *) echo "error: unknown option '$1'" >&2; usage ;;
  esac
  shift
done

suffix=$([ $quick = 1 ] && echo -quick || true)
out=${REPRODUCE_OUT:-$root/runs/reproduce/$name$suffix}
results=${REPRODUCE_RESULTS:-$root/experiments/results/reproduce}
for d in "$out" "$results"; do
  [ ! -e "$d" ] || [ -d "$d" ] || fail "$d is a file, not a directory (REPRODUCE_OUT names the run directory, REPRODUCE_RESULTS the page's)"
done
module() { PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 -m pelab.reproduce "$@"; }

if [ $mode = rules-only ]; then
  module rules "$name" --config "$config" --quick "$quick" --results "$results"
  exit
fi
if [ $mode = train ]; then
  pelab=${PELAB:-$root/build/pelab}
  [ -x "$pelab" ] || fail "no pelab binary at $pelab (build first: bash scripts/setup.sh)"
  bash "$root/scripts/reproduce_sweep.sh" "$pelab" "$config" "$out" "$jobs" "$quick"
else
  [ -d "$out" ] || fail "$out: no such run directory (run the recipe first, without --page-only)"
  module check-sweep "$name" "$out" --config "$config" --quick "$quick"
fi
# The results directory is made only for a page that is written: a refused page leaves no empty directory.
made=$(d=$results; while [ ! -e "$d" ]; do top=$d; d=$(dirname "$d"); done; echo "${top:-}")
mkdir -p "$results"
module page "$name" "$out" --config "$config" --quick "$quick" --out "$out/RESULT.md" --results "$results" || {
  rc=$?; [ -z "$made" ] || find "$made" -depth -type d -empty -delete; exit $rc; }
