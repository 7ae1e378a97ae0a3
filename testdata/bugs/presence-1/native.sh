#!/usr/bin/env bash
# Runs presence-1 N times natively (no lockstep) on loopback and counts runs
# where alice or bob exits non-zero (bob told alice is not there) or hangs, or
# the hub died. FIXED=1 native.sh N runs the fixed hub.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/presence-1" && pwd)/presence1
fixed=${FIXED:+--fixed}
port=17940
. "$(dirname "$0")/../common/native.sh"
ports_free $port
ph=
trap 'kill $ph 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" hub $port $fixed >/dev/null 2>&1 &
  ph=$!
  timeout 5 "$bin" alice 127.0.0.1:$port >/dev/null 2>/tmp/presence1-native.a &
  pa=$!
  ok=1
  timeout 5 "$bin" bob 127.0.0.1:$port >/dev/null 2>/tmp/presence1-native.b || ok=0
  wait $pa || ok=0
  kill -0 $ph 2>/dev/null || ok=0
  if [ $ok = 0 ]; then
    hits=$((hits + 1))
    echo "run $i: $(cat /tmp/presence1-native.a /tmp/presence1-native.b)" >&2
  fi
  kill $ph 2>/dev/null
  wait $ph 2>/dev/null
  ph=
done
rm -f /tmp/presence1-native.a /tmp/presence1-native.b
echo "native: $hits hits in $n runs"
