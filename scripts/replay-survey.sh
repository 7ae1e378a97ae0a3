#!/usr/bin/env bash
# Every trial's trace of a campaign replayed once: does each give its trial
# again, op for op, and at its virtual times? Passing trials count too (a
# replay must give any run again, not only failures).
#   LOCKSTEP=./bin/lockstep OUT=bench-out/replay-survey \
#     bash scripts/replay-survey.sh SPEC [TRIALS] [SEED]
# Prints a line per trial (same / parted, and where an op first ran at
# another virtual time) and a total; exits 1 when any replay parted.
set -euo pipefail
cd "$(dirname "$0")/.."
spec=$1
n=${2:-8}
seed=${3:-1}
bin=${LOCKSTEP:-./bin/lockstep}
out=${OUT:-bench-out/replay-survey}/$(basename "$(dirname "$spec")")-$(basename "$spec" .yaml)
rm -rf "$out"
mkdir -p "$out"
"$bin" run "$spec" -q -n "$n" --seed "$seed" --trace-all --verify=false -o "$out/run" >"$out/run.log" 2>&1 || true
same=0 parted=0 moved=0
for t in "$out"/run/trials/*/trace.jsonl; do
	i=$(basename "$(dirname "$t")")
	# (A replay of a failing trace exits 1 as the failure does: the
	# verdict is what it prints.)
	"$bin" replay -o "$out/replay-$i" "$t" >"$out/replay-$i.log" 2>&1 || true
	if grep -q '^same outcome and same op sequence' "$out/replay-$i.log"; then
		same=$((same + 1))
		if grep -q 'at other virtual times' "$out/replay-$i.log"; then
			moved=$((moved + 1))
			echo "trial $i: same ops, $(grep -h 'at other virtual times' "$out/replay-$i.log")"
		else
			echo "trial $i: same ops at the same virtual times"
		fi
	else
		parted=$((parted + 1))
		echo "trial $i: parted: $(tail -1 "$out/replay-$i.log" | cut -c1-240)"
	fi
done
echo "$spec: $same of $((same + parted)) replayed ($moved of them at other virtual times), $parted parted"
[ "$parted" -eq 0 ]
