#!/usr/bin/env bash
# Runs thread-1 N times natively (no lockstep) on loopback and counts runs
# where a subscriber exits non-zero (a value older than one it had) or
# hangs, or the broker died. FIXED=1 native.sh N runs the fixed broker. The
# sensor and both subscribers start together, once the broker listens.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/thread-1" && pwd)/thread1
fixed=${FIXED:+--fixed}
port=17960
. "$(dirname "$0")/../common/native.sh"
ports_free $port
pb=
trap 'kill $pb 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" broker $port $fixed >/dev/null 2>&1 &
  pb=$!
  until listening $port; do sleep 0.01; done
  timeout 5 "$bin" sub 127.0.0.1:$port dash temp 5 >/dev/null 2>/tmp/thread1-native.dash &
  pd=$!
  timeout 5 "$bin" sub 127.0.0.1:$port logger temp 5 >/dev/null 2>/tmp/thread1-native.logger &
  pl=$!
  ok=1
  timeout 5 "$bin" pub 127.0.0.1:$port temp 5 >/dev/null 2>&1 || ok=0
  wait $pd || ok=0
  wait $pl || ok=0
  kill -0 $pb 2>/dev/null || ok=0
  if [ $ok = 0 ]; then
    hits=$((hits + 1))
    echo "run $i: $(cat /tmp/thread1-native.dash /tmp/thread1-native.logger)" >&2
  fi
  kill $pb 2>/dev/null
  wait $pb 2>/dev/null
  pb=
done
rm -f /tmp/thread1-native.dash /tmp/thread1-native.logger
echo "native: $hits hits in $n runs"
