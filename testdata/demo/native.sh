#!/usr/bin/env bash
# Runs the demo N times natively (no lockstep) on loopback and counts crashes.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../bin/demo" && pwd)
hits=0
for ((i = 0; i < n; i++)); do
  "$bin/lockserver" 17000 >/dev/null 2>&1 &
  srv=$!
  "$bin/demoproc" writer 17001 127.0.0.1 17000 >/dev/null 2>&1 &
  wr=$!
  timeout 5 "$bin/demoproc" starter 127.0.0.1 17000 127.0.0.1 17001 >/dev/null 2>&1
  wait $wr 2>/dev/null
  if ! kill -0 $srv 2>/dev/null; then
    hits=$((hits + 1))
  fi
  kill $srv 2>/dev/null
  wait $srv 2>/dev/null
done
echo "native: $hits hits in $n runs"
