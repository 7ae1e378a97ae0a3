#!/usr/bin/env bash
# Runs fence-1 N times natively (no lockstep) on loopback and counts runs
# where writer a or b exits non-zero (a write in the log that the leader's
# state lacks) or hangs, or the store died.
# FIXED=1 native.sh N runs the fixed store.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/fence-1" && pwd)/fence1
fixed=${FIXED:+--fixed}
sp=17950 ap=17951
. "$(dirname "$0")/../common/native.sh"
ports_free $sp $ap
ps=
trap 'kill $ps 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" store $sp $fixed >/dev/null 2>&1 &
  ps=$!
  timeout 5 "$bin" node a 127.0.0.1:$sp $ap 4 >/dev/null 2>/tmp/fence1-native.a &
  pa=$!
  ok=1
  timeout 5 "$bin" node b 127.0.0.1:$sp 127.0.0.1:$ap 4 >/dev/null 2>/tmp/fence1-native.b || ok=0
  wait $pa || ok=0
  [ $ok = 1 ] || echo "run $i: $(cat /tmp/fence1-native.a /tmp/fence1-native.b)" >&2
  kill -0 $ps 2>/dev/null || ok=0
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $ps 2>/dev/null
  wait $ps 2>/dev/null
  ps=
done
rm -f /tmp/fence1-native.a /tmp/fence1-native.b
echo "native: $hits hits in $n runs"
