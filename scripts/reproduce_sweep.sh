#!/usr/bin/env bash
# reproduce_sweep.sh PELAB CONFIG OUT JOBS QUICK (scripts/reproduce.sh runs it): the recipe's `pelab sweep`, once per
# arm (`# reproduce.arm: ARM [--set ...]` lines, into OUT/ARM) with the variant's overrides (`# reproduce.quick:`
# when QUICK is 1), then one line in OUT/reproduce_times.txt: date, wall s, CPU s, jobs, overrides.
set -euo pipefail
pelab=$1 config=$2 out=$3 jobs=$4 quick=$5
root=$(cd "$(dirname "$0")/.." && pwd)
sets=()
if [ "$quick" = 1 ]; then
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
start=$(date +%s.%N)
if [ ${#arms[@]} = 0 ]; then
  (cd "$root" && "$pelab" sweep "$config" --jobs "$jobs" --out "$out" ${sets[@]+"${sets[@]}"})
else
  for i in "${!arms[@]}"; do
    read -r -a extra <<< "${arm_sets[$i]}"
    (cd "$root" && "$pelab" sweep "$config" --jobs "$jobs" --out "$out/${arms[$i]}" ${extra[@]+"${extra[@]}"} ${sets[@]+"${sets[@]}"})
  done
fi
end=$(date +%s.%N)
# CPU time of the finished children (the sweeps and their cells): user + sys from `times`' second line, taken in
# this shell (in a $(...) subshell `times` would see no children).
times_file=$(mktemp); times > "$times_file"
cpu=$(tail -1 "$times_file" | awk '{ s = 0; for (i = 1; i <= 2; ++i) { split($i, p, "m"); s += p[1] * 60 + p[2] } print s }')
rm -f "$times_file"
printf '%s %.1f %s %s %s\n' "$(date -u +%FT%TZ)" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$cpu" "$jobs" \
  "${sets[*]:-}" >> "$out/reproduce_times.txt"
