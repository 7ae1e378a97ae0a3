#!/usr/bin/env bash
# Runs gproc-3 N times natively (no lockstep) on loopback and counts hangs.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/gproc-3" && pwd)/gproc3
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" backup 17111 >/dev/null 2>&1 &
  b=$!
  "$bin" leader 17110 127.0.0.1:17111 >/dev/null 2>&1 &
  l=$!
  timeout 5 "$bin" client 127.0.0.1:17110 127.0.0.1:17111 >/dev/null 2>&1 || hits=$((hits + 1))
  kill $b $l 2>/dev/null
  wait $b $l 2>/dev/null
done
echo "native: $hits hits in $n runs"
