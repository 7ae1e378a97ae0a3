#!/usr/bin/env bash
# Runs retry-1 N times natively (no lockstep) on loopback and counts failures:
# the producer exits non-zero (a duplicated record, or no answer) or hangs.
# FIXED=1 runs the idempotent producer.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/retry-1" && pwd)/retry1
fixed=${FIXED:+--idempotent}
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" broker 17400 >/dev/null 2>&1 &
  b=$!
  timeout 5 "$bin" producer 127.0.0.1:17400 $fixed >/dev/null 2>&1 || hits=$((hits + 1))
  kill $b 2>/dev/null
  wait $b 2>/dev/null
done
echo "native: $hits hits in $n runs"
