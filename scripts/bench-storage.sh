#!/usr/bin/env bash
# The storage faults' campaigns (issue 37), into $OUT:
#   bugs:     power-1, rename-1 and corrupt-1 with every strategy (the
#             hit-ratio table), their fixed variants under POS, and the
#             crash controls of power-1 and rename-1 (a process crash in the
#             same window must never fail);
#   controls: etcd, ZooKeeper and Redis, each power-loss spec side by side
#             with the same spec under crashes (no storage faults), so that
#             both see the same load and their real times compare; Redis
#             also with appendfsync always.
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
  ./bin/lockstep bench -n "$trials" -j "$jobs" -o "$out/hit" "${specs[@]}"
  for b in "${bugs[@]}"; do
    run "$b-fixed" "testdata/bugs/$b/spec-fixed.yaml" -n "$trials" -s pos
    [ -f "testdata/bugs/$b/spec-crash.yaml" ] && run "$b-crash" "testdata/bugs/$b/spec-crash.yaml" -n "$trials" -s pos
  done
  run rename-1-fsync-file testdata/bugs/rename-1/spec-fsync-file.yaml -n "$trials" -s pos
fi
if [ "$part" = all ] || [ "$part" = controls ]; then
  make -s -C examples/etcd/client
  make -s -C testdata/workload
  # Each pair runs at the same time: the same machine load for both.
  for pair in "etcd spec-power spec-crash" "zookeeper spec-power spec-crash" "redis spec-power spec-crash" "redis spec-power-always -"; do
    read -r ex a b <<<"$pair"
    run "$ex-${a#spec-}" "examples/$ex/$a.yaml" -n "$ctrials" &
    [ "$b" != - ] && run "$ex-${b#spec-}" "examples/$ex/$b.yaml" -n "$ctrials" &
    wait
  done
fi
