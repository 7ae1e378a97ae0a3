#!/usr/bin/env bash
# Runs counter-1 N times natively (no lockstep) on loopback and counts runs
# where a worker exits non-zero (a lost update) or hangs, or the store died.
# FIXED=1 native.sh N runs the fixed workers.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/counter-1" && pwd)/counter1
fixed=${FIXED:+--fixed}
sp=17920 ap=17921
. "$(dirname "$0")/../common/native.sh"
ports_free $sp $ap
ps=
trap 'kill $ps 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" store $sp >/dev/null 2>&1 &
  ps=$!
  timeout 5 "$bin" first 127.0.0.1:$sp $ap 3 $fixed >/dev/null 2>/tmp/counter1-native.a &
  pa=$!
  ok=1
  timeout 5 "$bin" second 127.0.0.1:$sp 127.0.0.1:$ap 3 $fixed >/dev/null 2>/tmp/counter1-native.b || ok=0
  wait $pa || ok=0
  kill -0 $ps 2>/dev/null || ok=0
  if [ $ok = 0 ]; then
    hits=$((hits + 1))
    echo "run $i: $(cat /tmp/counter1-native.a /tmp/counter1-native.b)" >&2
  fi
  kill $ps 2>/dev/null
  wait $ps 2>/dev/null
  ps=
done
rm -f /tmp/counter1-native.a /tmp/counter1-native.b
echo "native: $hits hits in $n runs"
