#!/usr/bin/env bash
# Runs watch-1 N times natively (no lockstep) on loopback and counts runs
# where the watcher or the writer exits non-zero (a write missing from the
# mirror) or hangs, or the store died. FIXED=1 native.sh N runs the fixed watcher.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/watch-1" && pwd)/watch1
fixed=${FIXED:+--fixed}
port=17910
. "$(dirname "$0")/../common/native.sh"
ports_free $port
ps=
trap 'kill $ps 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" store $port >/dev/null 2>&1 &
  ps=$!
  timeout 5 "$bin" writer 127.0.0.1:$port 4 >/dev/null 2>&1 &
  pw=$!
  ok=1
  timeout 5 "$bin" watcher 127.0.0.1:$port 4 $fixed >/dev/null 2>/tmp/watch1-native.err || {
    ok=0
    echo "run $i: $(cat /tmp/watch1-native.err)" >&2
  }
  wait $pw || ok=0
  kill -0 $ps 2>/dev/null || ok=0
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $ps 2>/dev/null
  wait $ps 2>/dev/null
  ps=
done
rm -f /tmp/watch1-native.err
echo "native: $hits hits in $n runs"
