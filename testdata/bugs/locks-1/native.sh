#!/usr/bin/env bash
# Runs locks-1 N times natively (no lockstep) on loopback and counts hangs.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/locks-1" && pwd)/locks1
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" replica 17101 >/dev/null 2>&1 &
  r=$!
  "$bin" lockd 17100 127.0.0.1:17101 >/dev/null 2>&1 &
  l=$!
  timeout 5 "$bin" app 127.0.0.1:17100 127.0.0.1:17101 >/dev/null 2>&1 || hits=$((hits + 1))
  kill $r $l 2>/dev/null
  wait $r $l 2>/dev/null
done
echo "native: $hits hits in $n runs"
