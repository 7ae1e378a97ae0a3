#!/usr/bin/env bash
# Runs move-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (a lost acknowledged write) or hangs, or a
# server died. FIXED=1 native.sh N runs the fixed a.
set -u
n=${1:-1000}
prog="$(cd "$(dirname "$0")/../../bin/bugs/move-1" && pwd)/move1"
fixed=${FIXED:+--fixed}
pc=17950 pa=17951 pb=17952
. "$(dirname "$0")/../common/native.sh"
ports_free $pc $pa $pb
pids=
trap 'kill $pids 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$prog" b $pb >/dev/null 2>&1 &
  pids="$!"
  "$prog" a $pa $fixed >/dev/null 2>&1 &
  pids="$pids $!"
  "$prog" coord $pc 127.0.0.1:$pa 127.0.0.1:$pb 15 >/dev/null 2>&1 &
  pids="$pids $!"
  ok=1
  timeout 5 "$prog" client 127.0.0.1:$pc 3 10 >/dev/null 2>/tmp/move1-native.c || ok=0
  tally $i $ok /tmp/move1-native.c $pids
  pids=
done
rm -f /tmp/move1-native.c
echo "native: $hits hits in $n runs"
