#!/usr/bin/env bash
# Runs gproc-3 N times natively (no lockstep) on loopback with the spec's
# fault injected Jepsen-style: the leader is killed (-9) at a uniformly
# random moment 50-150 ms after the client started (the spec's window) and
# restarted 10-100 ms later with the same command. Counts hangs (the client
# not done within 5 s).
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/gproc-3" && pwd)/gproc3
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" backup 17111 >/dev/null 2>&1 &
  b=$!
  "$bin" leader 17110 127.0.0.1:17111 >/dev/null 2>&1 &
  l=$!
  timeout 5 "$bin" client 127.0.0.1:17110 127.0.0.1:17111 >/dev/null 2>&1 &
  c=$!
  sleep "$(ms $((50 + RANDOM % 101)))"
  kill -9 $l 2>/dev/null
  wait $l 2>/dev/null
  sleep "$(ms $((10 + RANDOM % 91)))"
  "$bin" leader 17110 127.0.0.1:17111 >/dev/null 2>&1 &
  l=$!
  wait $c || hits=$((hits + 1))
  kill $b $l 2>/dev/null
  wait $b $l 2>/dev/null
done
echo "native: $hits hits in $n runs"
