#!/usr/bin/env bash
# Runs refresh-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (logged out by reuse detection) or hangs,
# or a server died. FIXED=1 native.sh N runs the fixed client.
set -u
n=${1:-1000}
prog="$(cd "$(dirname "$0")/../../bin/bugs/refresh-1" && pwd)/refresh1"
fixed=${FIXED:+--fixed}
pa=17960 pi=17961
. "$(dirname "$0")/../common/native.sh"
ports_free $pa $pi
pids=
trap 'kill $pids 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$prog" auth $pa >/dev/null 2>&1 &
  pids="$!"
  "$prog" api $pi >/dev/null 2>&1 &
  pids="$pids $!"
  ok=1
  timeout 5 "$prog" client 127.0.0.1:$pa 127.0.0.1:$pi 4 $fixed >/dev/null 2>/tmp/refresh1-native.c || ok=0
  tally $i $ok /tmp/refresh1-native.c $pids
  pids=
done
rm -f /tmp/refresh1-native.c
echo "native: $hits hits in $n runs"
