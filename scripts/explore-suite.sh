#!/usr/bin/env bash
# Trials to first failure on the bug suite, explore against POS, on the
# bugs' own specs (unchanged): every bug, SEEDS seeds, at most TRIALS trials
# each (a bug not found counts as TRIALS+1 in the geometric mean, which
# flatters the strategy that missed it). Writes OUT/table.md. With HIT=1,
# every campaign runs all TRIALS trials and the table gives hit ratios.
#   TRIALS=300 SEEDS="1 2 3" STRATEGIES="pos explore" OUT=bench-out/explore HIT=
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${TRIALS:-300}
seeds=${SEEDS:-1 2 3}
strategies=${STRATEGIES:-pos explore}
out=${OUT:-bench-out/explore}
bin=${LOCKSTEP:-./bin/lockstep}
mkdir -p "$out"
rows="$out/rows.tsv"
: >"$rows"
for f in testdata/bugs/*/spec.yaml; do
  bug=$(basename "$(dirname "$f")")
  for seed in $seeds; do
    for st in $strategies; do
      log="$out/$bug-$st-$seed.txt"
      start=$(date +%s.%N)
      stop=--stop-on-first
      [ -n "${HIT:-}" ] && stop=
      "$bin" run -q $stop --verify=false -n "$trials" --seed "$seed" -s "$st" --replace -o "$out/runs/$bug-$st-$seed" "$f" >"$log" 2>&1 || true
      end=$(date +%s.%N)
      first=$(sed -n 's/^first failure: trial \([0-9]*\):.*/\1/p' "$log")
      ran=$(sed -n 's/^spec .*: \([0-9]*\) trials in .*/\1/p' "$log")
      failures=$(sed -n 's/^failures: \([0-9]*\).*/\1/p' "$log")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bug" "$st" "$seed" "${first:--}" "${ran:-0}" "$(echo "$end - $start" | bc)" "${failures:-0}" >>"$rows"
      rm -rf "$out/runs/$bug-$st-$seed"
    done
  done
done
python3 scripts/explore-table.py "$rows" "$trials" ${HIT:+hit} >"$out/table.md"
cat "$out/table.md"
