#!/usr/bin/env bash
# Runs retry-1 N times natively (no lockstep) on loopback and counts failures:
# the producer exits non-zero (a duplicated record, or no answer) or hangs.
# FIXED=1 runs the idempotent producer. A broker that is gone after a run
# could not listen (the port is taken): the producer talked to a stranger,
# so the script stops rather than count that run.
set -u
n=${1:-1000}
port=17860
bin=$(cd "$(dirname "$0")/../../bin/bugs/retry-1" && pwd)/retry1
fixed=${FIXED:+--idempotent}
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" broker $port >/dev/null 2>&1 &
  b=$!
  timeout 5 "$bin" producer 127.0.0.1:$port $fixed >/dev/null 2>&1 || hits=$((hits + 1))
  if ! kill $b 2>/dev/null; then
    echo "native: the broker died in run $i (port $port in use?)" >&2
    exit 2
  fi
  wait $b 2>/dev/null
done
echo "native: $hits hits in $n runs"
