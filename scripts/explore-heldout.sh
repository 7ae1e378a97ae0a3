#!/usr/bin/env bash
# Exploring campaigns on the specs of testdata/specs/explore (bugs behind a
# rare message kind or an aimed fault, which the bug suite does not have),
# many seeds each, stopped at the first failure: which seeds found the bug,
# and at which trial. One seed's campaign changes with any change to what
# explore keeps or draws, so a change is judged on many seeds, not on the
# one a test uses (bench/results/explore-race-orders-2026-12-04.md).
#   SPECS="handoff lease lease-quorum" SEEDS="$(seq 1 18)" TRIALS=150 \
#     STRATEGY=explore LOCKSTEP=./bin/lockstep OUT=bench-out/heldout \
#     bash scripts/explore-heldout.sh
# Writes OUT/rows.tsv (spec, seed, first failure or -, 0-based) and prints
# a line per spec: the first failures by seed and how many seeds found it.
set -euo pipefail
cd "$(dirname "$0")/.."
specs=${SPECS:-handoff lease lease-quorum}
seeds=${SEEDS:-$(seq 1 18)}
trials=${TRIALS:-150}
strategy=${STRATEGY:-explore}
bin=${LOCKSTEP:-./bin/lockstep}
out=${OUT:-bench-out/heldout}
mkdir -p "$out"
rows="$out/rows.tsv"
: >"$rows"
for sp in $specs; do
  f=testdata/specs/explore/$sp.yaml
  [ -f "$f" ] || { echo "explore-heldout: no spec $f" >&2; exit 2; }
  line="" found=0
  for seed in $seeds; do
    log="$out/$sp-$seed.txt"
    "$bin" run -q --stop-on-first --verify=false -n "$trials" --seed "$seed" -s "$strategy" \
      --replace -o "$out/run" "$f" >"$log" 2>&1 || true
    first=$(sed -n 's/^first failure: trial \([0-9]*\):.*/\1/p' "$log")
    if grep -qE '^ +lockstep-error ' "$log"; then
      echo "explore-heldout: $sp seed $seed: a lockstep error (see $log)" >&2
    fi
    printf '%s\t%s\t%s\n' "$sp" "$seed" "${first:--}" >>"$rows"
    line+="${first:--} "
    [ -n "$first" ] && found=$((found + 1))
  done
  echo "$sp: $line($found of $(echo $seeds | wc -w) seeds)"
done
rm -rf "$out/run"
