#!/usr/bin/env bash
# Trials to reproduce each bug of the suite from its production log
# (testdata/bugs/*/symptom.log, docs/explore.md "The bug suite's
# symptoms"): explore with --symptom (the first trial that reproduces the
# excerpt: prints its last line, or fails as its failure line says)
# against POS without it (the first failing trial), on the bugs' own specs,
# SEEDS seeds, at most TRIALS trials each (one not found counts as
# TRIALS+1 in the geometric mean). RUNS may add "explore" (explore without
# the symptom, first failure) and "pos-symptom" (POS with the symptom: the
# first of POS's trials that reproduces it, by the symptom's own measure).
# Writes OUT/rows.tsv and OUT/table.md.
#   TRIALS=300 SEEDS="1 2 3" RUNS="pos symptom" OUT=bench-out/symptom BUGS="crash-1 ..."
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${TRIALS:-300}
seeds=${SEEDS:-1 2 3}
runs=${RUNS:-pos symptom}
out=${OUT:-bench-out/symptom}
bin=${LOCKSTEP:-./bin/lockstep}
mkdir -p "$out"
rows="$out/rows.tsv"
: >"$rows"
for sym in testdata/bugs/*/symptom.log; do
  dir=$(dirname "$sym")
  bug=$(basename "$dir")
  if [ -n "${BUGS:-}" ] && [[ " $BUGS " != *" $bug "* ]]; then
    continue
  fi
  for seed in $seeds; do
    for run in $runs; do
      case $run in
      pos) args=(-s pos) ;;
      explore) args=(-s explore) ;;
      symptom) args=(-s explore --symptom "$sym") ;;
      pos-symptom) args=(-s pos --symptom "$sym") ;;
      *) echo "symptom-suite.sh: unknown run $run (pos, explore, symptom, pos-symptom)" >&2 && exit 2 ;;
      esac
      log="$out/$bug-$run-$seed.txt"
      start=$(date +%s.%N)
      # With --symptom, --stop-on-first stops at the first trial that
      # reproduces it, not at another failure on the way.
      "$bin" run -q --stop-on-first --verify=false -n "$trials" --seed "$seed" "${args[@]}" --replace -o "$out/runs/$bug-$run-$seed" "$dir/spec.yaml" >"$log" 2>&1 || true
      end=$(date +%s.%N)
      if [[ $run = *symptom ]]; then
        first=$(sed -n 's/^symptom: reproduced by trial \([0-9]*\).*/\1/p' "$log")
      else
        first=$(sed -n 's/^first failure: trial \([0-9]*\):.*/\1/p' "$log")
      fi
      ran=$(sed -n 's/^spec .*: \([0-9]*\) trials in .*/\1/p' "$log")
      failures=$(sed -n 's/^failures: \([0-9]*\).*/\1/p' "$log")
      label=$run
      [ "$run" = symptom ] && label=explore+symptom
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bug" "$label" "$seed" "${first:--}" "${ran:-0}" "$(echo "$end - $start" | bc)" "${failures:-0}" >>"$rows"
      rm -rf "$out/runs/$bug-$run-$seed"
    done
  done
done
python3 scripts/explore-table.py "$rows" "$trials" | sed '1s/Trials to first failure/Trials to reproduce (pos, explore: the first failing trial; explore+symptom, pos-symptom: the first that reproduces the symptom)/' >"$out/table.md"
cat "$out/table.md"
