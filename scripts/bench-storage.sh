#!/usr/bin/env bash
# The storage faults' campaigns (issue 37), into $OUT:
#   bugs:     power-1, rename-1 and corrupt-1 with every strategy (the
#             hit-ratio table), their fixed variants under POS, and the
#             crash controls of power-1 and rename-1 (a process crash in the
#             same window must never fail);
#   controls: etcd, ZooKeeper and Redis, each power-loss spec followed by
#             the same spec under crashes (no storage faults), whose real
#             time per trial is the baseline; Redis also with appendfsync
#             always. One campaign at a time: on a shared machine, compare
#             times only between campaigns that saw the same load.
#   TRIALS=1000 (bug cells) CONTROL_TRIALS=100  JOBS=1  OUT=bench-out/storage
#   PART=bugs|controls|all (default all)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${TRIALS:-1000}
ctrials=${CONTROL_TRIALS:-100}
jobs=${JOBS:-1}
out=${OUT:-bench-out/storage}
part=${PART:-all}
mkdir -p "$out"
run() { # run NAME SPEC [flags...]: one POS campaign, its summary in $out/NAME.txt
  local name=$1 spec=$2
  shift 2
  ./bin/lockstep run -q -j "$jobs" --replace -o "$out/$name" --json "$out/$name.json" "$@" "$spec" >"$out/$name.txt" 2>&1 || true
  echo "$name: $(grep -m1 '^spec ' "$out/$name.txt"); $(grep -m1 '^failures' "$out/$name.txt")"
}
if [ "$part" = all ] || [ "$part" = bugs ]; then
  bugs=(power-1 rename-1 corrupt-1)
  specs=()
  for b in "${bugs[@]}"; do specs+=("testdata/bugs/$b/spec.yaml"); done
  # bench's native cell (plain runs, no faults) cannot fail these: left out.
  ./bin/lockstep bench -n "$trials" -j "$jobs" --strategies random,pct,pos,pos*,random+,pct+,pos+,pos*+ -o "$out/hit" "${specs[@]}"
  for b in "${bugs[@]}"; do
    run "$b-fixed" "testdata/bugs/$b/spec-fixed.yaml" -n "$trials" -s pos
    if [ -f "testdata/bugs/$b/spec-crash.yaml" ]; then run "$b-crash" "testdata/bugs/$b/spec-crash.yaml" -n "$trials" -s pos; fi
  done
  run rename-1-fsync-file testdata/bugs/rename-1/spec-fsync-file.yaml -n "$trials" -s pos
fi
if [ "$part" = all ] || [ "$part" = controls ]; then
  make -s -C examples/etcd/client
  for c in etcd/spec-power etcd/spec-crash zookeeper/spec-power zookeeper/spec-crash \
    redis/spec-power redis/spec-crash redis/spec-power-always; do
    run "${c%%/*}-${c#*/spec-}" "examples/$c.yaml" -n "$ctrials"
  done
fi
