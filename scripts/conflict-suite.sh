#!/usr/bin/env bash
# Hit ratios of the conflict-analysis ("+") strategies against their bases
# on the order bugs (issue 48): every bug, SEEDS seeds, TRIALS trials per
# campaign, each CELL a strategy with an optional signature scheme
# (strategy:scheme), then ":wN" for Morpheus's soft mode with weight N
# (run --conflict-weight N: pos+:proc+pc+msg:w10, pos+:w3), ":warm" at the
# end for a campaign that starts from the history an earlier campaign of
# WARM (default TRIALS) trials with another seed saved. Campaigns run PAR at a time, one job each. Writes
# OUT/rows.tsv and OUT/table.md (scripts/conflict-table.py).
#   TRIALS=300 SEEDS="1 2 3" PAR=2 OUT=bench-out/conflict
#   BUGS="gproc-1 gproc-3 locks-1 locks-2 ms-1 ra-1 mnesia-2"
#   CELLS="pos pos+:proc+pc pos+:proc+pc+msg"  BUGDIR=testdata/bugs
#   LOCKSTEP=./bin/lockstep
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${TRIALS:-300}
seeds=${SEEDS:-1 2 3}
bugs=${BUGS:-gproc-1 gproc-3 locks-1 locks-2 ms-1 ra-1 mnesia-2}
cells=${CELLS:-pos pos+:proc+pc pos+:proc+pc+msg}
par=${PAR:-2}
out=${OUT:-bench-out/conflict}
bin=${LOCKSTEP:-./bin/lockstep}
bugdir=${BUGDIR:-testdata/bugs}
mkdir -p "$out/logs"
rows="$out/rows.tsv"
one() {
  local bug=$1 cell=$2 seed=$3
  local st=${cell%%:*} scheme= warm= weight= last
  [ "$st" != "$cell" ] && scheme=${cell#*:}
  if [ "${scheme##*:}" = warm ]; then
    scheme=${scheme%:warm}
    warm=yes
    [ "$scheme" = warm ] && scheme=
  fi
  # A weight is the last part left, "w" and a number (a scheme's own
  # parts, as stack:K's K, never start with "w").
  last=${scheme##*:}
  if [[ $last =~ ^w[0-9.]+$ ]]; then
    weight=${last#w}
    scheme=${scheme%"$last"}
    scheme=${scheme%:}
  fi
  local name="$bug-${cell//[:+*]/_}-$seed"
  local log="$out/logs/$name.txt" hist=()
  if [ -n "$warm" ]; then
    # A history learned by an earlier campaign of WARM trials (another
    # seed), as a CI run would load its predecessor's.
    "$bin" run -q --verify=false -n "${WARM:-$trials}" --seed "$((seed + 1000))" -s "$st" ${scheme:+--scheme "$scheme"} ${weight:+--conflict-weight "$weight"} \
      --history "$out/runs/$name.history" --replace -o "$out/runs/$name-warm" "$bugdir/$bug/spec.yaml" >"$log.warm" 2>&1 || true
    hist=(--history "$out/runs/$name.history")
  fi
  local start end
  start=$(date +%s.%N)
  echo "cell: $cell" >"$log"
  "$bin" run -q --stats --verify=false -n "$trials" --seed "$seed" -s "$st" ${scheme:+--scheme "$scheme"} ${weight:+--conflict-weight "$weight"} "${hist[@]}" \
    --replace -o "$out/runs/$name" "$bugdir/$bug/spec.yaml" >>"$log" 2>&1 || true
  end=$(date +%s.%N)
  rm -rf "$out/runs/$name" "$out/runs/$name-warm" "$out/runs/$name.history"
  local failures first imm ran
  failures=$(sed -n 's/^failures: \([0-9]*\).*/\1/p' "$log")
  # The trials that ran: fewer than asked when the campaign was stopped.
  ran=$(sed -n 's/^spec .*: \([0-9]*\) trials in .*/\1/p' "$log")
  first=$(sed -n 's/^first failure: trial \([0-9]*\):.*/\1/p' "$log")
  imm=$(sed -n 's/^  released at once \([0-9.]*\) of \([0-9.]*\) ops.*/\1\/\2/p' "$log")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n' "$bug" "$cell" "$seed" "${ran:-0}" "${failures:-0}" "${first:--}" \
    "$(echo "$end - $start" | bc)" "${imm:--}"
}
export -f one
export out bin trials WARM bugdir
for bug in $bugs; do for seed in $seeds; do for cell in $cells; do
  printf '%s %s %s\n' "$bug" "$cell" "$seed"
done; done; done | xargs -P "$par" -L 1 bash -c 'one "$@"' _ >>"$rows"
python3 scripts/conflict-table.py "$rows" >"$out/table.md"
cat "$out/table.md"
