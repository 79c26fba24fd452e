#!/usr/bin/env bash
# reproduce.sh NAME [--quick] [--jobs N] [--page-only]: run the reproduction recipe
# experiments/reproduce/NAME.toml with `pelab sweep` (--jobs 2 by default; a re-run resumes), then write
# its result page (the paper's numbers beside pelab's, and a verdict computed from them) to
# RUN_DIR/RESULT.md and a copy to experiments/results/reproduce/NAME[.quick].md.
#   --quick      the recipe's smaller variant (the `# reproduce.quick:` overrides in its header), in
#                runs/reproduce/NAME-quick; the page says it is the quick variant and what it changes
#   --page-only  do not train: write the page from an existing run directory
# A recipe whose header has `# reproduce.arm: ARM [--set ...]` lines runs its sweep once per arm, with that
# arm's overrides, into RUN_DIR/ARM (arms compare settings that one cartesian [sweep] grid cannot pair,
# e.g. coupled position ids against plain ones, each of which needs its own position mode).
# Environment: PELAB (binary, default build/pelab), REPRODUCE_OUT (run directory), REPRODUCE_RESULTS
# (where the page copy goes, default experiments/results/reproduce).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
recipes_dir="$root/experiments/reproduce"
known=$(cd "$recipes_dir" && ls ./*.toml 2>/dev/null | sed 's|^\./||; s|\.toml$||' | tr '\n' ' ')
usage() { echo "usage: scripts/reproduce.sh NAME [--quick] [--jobs N] [--page-only]; NAME is one of: $known" >&2; exit 2; }

[ $# -ge 1 ] || usage
name=$1; shift
case "$name" in -h|--help) usage ;; esac
config="$recipes_dir/$name.toml"
if [[ ! "$name" =~ ^[a-z0-9_]+$ ]] || [ ! -f "$config" ]; then
  echo "error: unknown recipe '$name'; known recipes (experiments/reproduce/*.toml): $known" >&2
  exit 2
fi
quick=0; jobs=2; page_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --page-only) page_only=1 ;;
    --jobs) [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "error: --jobs needs a positive integer" >&2; exit 2; }
            jobs=$2; shift ;;
    *) echo "error: unknown option '$1'" >&2; usage ;;
  esac
  shift
done

pelab=${PELAB:-$root/build/pelab}
suffix=""; sets=()
if [ $quick = 1 ]; then
  suffix="-quick"
  line=$(sed -n 's/^# reproduce\.quick: //p' "$config" | head -1)
  [ -n "$line" ] || { echo "error: $config has no '# reproduce.quick:' line" >&2; exit 2; }
  read -r -a sets <<< "$line"
fi
arms=(); arm_sets=()  # arm i: its name and its overrides, one string each
while IFS= read -r line; do
  arm=${line%% *}; rest=""; [ "$arm" = "$line" ] || rest=${line#* }
  [[ "$arm" =~ ^[a-z0-9_]+$ ]] || { echo "error: $config: '# reproduce.arm: $line': the arm's name must be [a-z0-9_]+" >&2; exit 2; }
  arms+=("$arm"); arm_sets+=("$rest")
done < <(sed -n 's/^# reproduce\.arm: //p' "$config")
out=${REPRODUCE_OUT:-$root/runs/reproduce/$name$suffix}
results=${REPRODUCE_RESULTS:-$root/experiments/results/reproduce}

if [ $page_only = 0 ]; then
  [ -x "$pelab" ] || { echo "error: no pelab binary at $pelab (build first: bash scripts/setup.sh)" >&2; exit 2; }
  mkdir -p "$out"
  start=$(date +%s.%N)
  if [ ${#arms[@]} = 0 ]; then
    (cd "$root" && "$pelab" sweep "$config" --jobs "$jobs" --out "$out" ${sets[@]+"${sets[@]}"})
  else
    for i in "${!arms[@]}"; do
      read -r -a extra <<< "${arm_sets[$i]}"
      (cd "$root" && "$pelab" sweep "$config" --jobs "$jobs" --out "$out/${arms[$i]}" \
        ${extra[@]+"${extra[@]}"} ${sets[@]+"${sets[@]}"})
    done
  fi
  end=$(date +%s.%N)
  # CPU time of the finished children (the sweep and its cells): user + sys from `times`' second line,
  # taken in this shell (in a $(...) subshell `times` would see no children).
  times_file=$(mktemp); times > "$times_file"
  cpu=$(tail -1 "$times_file" | awk '{ s = 0; for (i = 1; i <= 2; ++i) { split($i, p, "m"); s += p[1] * 60 + p[2] } print s }')
  rm -f "$times_file"
  printf '%s %.1f %s %s %s\n' "$(date -u +%FT%TZ)" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$cpu" "$jobs" "${sets[*]:-}" \
    >> "$out/reproduce_times.txt"
fi
for d in ${arms[@]+"${arms[@]/#/$out/}"}; do
  [ -f "$d/summary.csv" ] || { echo "error: $d has no summary.csv (run the recipe first, without --page-only)" >&2; exit 2; }
done
[ ${#arms[@]} != 0 ] || [ -f "$out/summary.csv" ] || { echo "error: $out has no summary.csv (run the recipe first, without --page-only)" >&2; exit 2; }
mkdir -p "$results"
/usr/bin/python3 "$root/scripts/reproduce_page.py" "$name" "$out" --quick "$quick" --config "$config" \
  --out "$out/RESULT.md" --copy "$results/$name$( [ $quick = 1 ] && echo .quick ).md"
