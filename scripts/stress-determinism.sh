#!/bin/bash
# stress-determinism.sh [TRIALS]: runs the bundled demo's campaign on an
# idle machine, then again with --jobs 2 while a real-time busy loop holds
# each CPU in bursts (as other campaigns' tracees do, which run SCHED_RR:
# testdata/bin/c/busy_bursts), and compares every trial's schedule. Same
# seed, same schedule: any difference is lockstep's, and the script exits
# 1. LOCKSTEP names another binary to try (default bin/lockstep), STRATEGY
# another strategy (default pos; explore and explore+ check that their
# corpus and conflict history advance by generations, whatever finishes
# first).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
lockstep=${LOCKSTEP:-./bin/lockstep}
strategy=${STRATEGY:-pos}
out=$(mktemp -d /tmp/lockstep-stress.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
"$lockstep" run -q -n "$n" -s "$strategy" --trace-all -o "$out/idle" testdata/demo/demo.yaml >/dev/null || true
for cpu in $(seq 0 $(($(nproc) - 1))); do
	chrt -r 1 taskset -c "$cpu" testdata/bin/c/busy_bursts 300 20000 &
done
"$lockstep" run -q -n "$n" -s "$strategy" -j 2 --trace-all -o "$out/loaded" testdata/demo/demo.yaml >/dev/null || true
kill $(jobs -p) 2>/dev/null || true
differ=0
for d in "$out"/idle/trials/*/; do
	t=$(basename "$d")
	if ! cmp -s <(grep '"record"' "$d/trace.jsonl" | sed 's/"result":[^,}]*//') \
		<(grep '"record"' "$out/loaded/trials/$t/trace.jsonl" 2>/dev/null | sed 's/"result":[^,}]*//'); then
		echo "trial $t: schedule differs under load"
		differ=$((differ + 1))
	fi
done
echo "$differ of $n trials differ ($out)"
[ "$differ" = 0 ]
