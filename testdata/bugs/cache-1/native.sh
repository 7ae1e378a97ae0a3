#!/usr/bin/env bash
# Runs cache-1 N times natively (no lockstep) on loopback and counts runs
# where a client exits non-zero (a stale read) or hangs, or a server died.
# FIXED=1 native.sh N runs the fixed cache server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/cache-1" && pwd)/cache1
fixed=${FIXED:+--fixed}
dp=17930 mp=17931 ap=17932
. "$(dirname "$0")/../common/native.sh"
ports_free $dp $mp $ap
pd= pm= pa=
trap 'kill $pd $pm $pa 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" db $dp 2 >/dev/null 2>&1 &
  pd=$!
  "$bin" mc $mp $fixed >/dev/null 2>&1 &
  pm=$!
  "$bin" app $ap 127.0.0.1:$dp 127.0.0.1:$mp >/dev/null 2>&1 &
  pa=$!
  timeout 5 "$bin" client 127.0.0.1:$ap 1 1 >/dev/null 2>/tmp/cache1-native.a &
  pc=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:$ap 2 1 >/dev/null 2>/tmp/cache1-native.b || ok=0
  wait $pc || ok=0
  [ $ok = 1 ] || echo "run $i: $(cat /tmp/cache1-native.a /tmp/cache1-native.b)" >&2
  for p in $pd $pm $pa; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $pd $pm $pa 2>/dev/null
  wait $pd $pm $pa 2>/dev/null
  pd= pm= pa=
done
rm -f /tmp/cache1-native.a /tmp/cache1-native.b
echo "native: $hits hits in $n runs"
