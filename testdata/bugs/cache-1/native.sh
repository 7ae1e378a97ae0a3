#!/usr/bin/env bash
# Runs cache-1 N times natively (no lockstep) on loopback and counts runs
# where the reader or the writer exits non-zero (a stale cache) or hangs, or
# a server died. FIXED=1 native.sh N runs the fixed cache.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/cache-1" && pwd)/cache1
fixed=${FIXED:+--fixed}
sp=17930 cp=17931 rp=17932
. "$(dirname "$0")/../common/native.sh"
ports_free $sp $cp $rp
ps= pc=
trap 'kill $ps $pc 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" store $sp 4 >/dev/null 2>&1 &
  ps=$!
  "$bin" cache $cp 127.0.0.1:$sp $fixed >/dev/null 2>&1 &
  pc=$!
  until listening $cp; do sleep 0.01; done
  timeout 5 "$bin" writer 127.0.0.1:$sp 4 127.0.0.1:$rp >/dev/null 2>&1 &
  pw=$!
  ok=1
  timeout 5 "$bin" reader 127.0.0.1:$cp 4 $rp >/dev/null 2>/tmp/cache1-native.err || {
    ok=0
    echo "run $i: $(cat /tmp/cache1-native.err)" >&2
  }
  wait $pw || ok=0
  for p in $ps $pc; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $ps $pc 2>/dev/null
  wait $ps $pc 2>/dev/null
  ps= pc=
done
rm -f /tmp/cache1-native.err
echo "native: $hits hits in $n runs"
