#!/usr/bin/env bash
# Runs locks-1 N times natively (no lockstep) on loopback with the spec's
# fault injected Jepsen-style: lockd is killed (-9) at a uniformly random
# moment 50-100 ms after the app started (the spec's window: the app's second
# tenure) and restarted 0-10 ms later with the same command and data
# directory. Counts hangs (the app not done within 5 s).
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/locks-1" && pwd)/locks1
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
hits=0
for ((i = 0; i < n; i++)); do
  d=$(mktemp -d)
  "$bin" replica 17101 >/dev/null 2>&1 &
  r=$!
  "$bin" lockd 17100 127.0.0.1:17101 "$d" >/dev/null 2>&1 &
  l=$!
  timeout 5 "$bin" app 127.0.0.1:17100 127.0.0.1:17101 >/dev/null 2>&1 &
  a=$!
  sleep "$(ms $((50 + RANDOM % 51)))"
  kill -9 $l 2>/dev/null
  wait $l 2>/dev/null
  sleep "$(ms $((RANDOM % 11)))"
  "$bin" lockd 17100 127.0.0.1:17101 "$d" >/dev/null 2>&1 &
  l=$!
  wait $a || hits=$((hits + 1))
  kill $r $l 2>/dev/null
  wait $r $l 2>/dev/null
  rm -rf "$d"
done
echo "native: $hits hits in $n runs"
