#!/usr/bin/env bash
# The hit-ratio benchmark (Morpheus Table 3 style): every bug of
# testdata/bugs with every strategy, plus plain native runs as the
# baseline, then each bug's fixed variant under POS, which must never fail.
#   TRIALS=1000 (default) | QUICK=1 (100 trials)   JOBS=N   OUT=dir
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${TRIALS:-1000}
[ -n "${QUICK:-}" ] && trials=100
# One job by default: on the 2-vCPU machines this project runs on, two jobs
# gave fewer trials per minute than one (see docs/results.md, Performance).
jobs=${JOBS:-1}
out=${OUT:-bench-out/hit}
mkdir -p "$out"
specs=(testdata/bugs/*/spec.yaml)
./bin/lockstep bench -n "$trials" -j "$jobs" -o "$out" "${specs[@]}"
{
  echo
  echo "Fixed variants (POS, $trials trials each; any failure would be lockstep's or the fix's fault):"
  echo
  echo "| bug | failures |"
  echo "|---|---|"
} >>"$out/table.md"
status=0
for f in testdata/bugs/*/spec-fixed.yaml; do
  name=$(basename "$(dirname "$f")")
  if ./bin/lockstep run -q -n "$trials" -j "$jobs" -s pos --replace -o "$out/fixed/$name" "$f" >"$out/fixed-$name.txt"; then
    echo "| $name | 0 / $trials |" >>"$out/table.md"
  else
    status=1
    echo "| $name | $(sed -n 's/^failures: \([0-9]*\).*/\1/p' "$out/fixed-$name.txt") / $trials (see fixed-$name.txt) |" >>"$out/table.md"
  fi
done
cat "$out/table.md"
exit $status
