#!/usr/bin/env bash
# Runs gproc-1 N times natively (no lockstep) on loopback and counts failures:
# driver exit non-zero (split views), a hang (timeout), or a dead server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/gproc-1" && pwd)/gproc
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" n1 17200 >/dev/null 2>&1 &
  p1=$!
  "$bin" monitor 17202 127.0.0.1:17200 >/dev/null 2>&1 &
  pm=$!
  "$bin" n2 17201 127.0.0.1:17200 >/dev/null 2>&1 &
  p2=$!
  ok=1
  timeout 5 "$bin" driver 127.0.0.1:17200 127.0.0.1:17201 127.0.0.1:17202 >/dev/null 2>&1 || ok=0
  for p in $p1 $pm $p2; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $p1 $pm $p2 2>/dev/null
  wait $p1 $pm $p2 2>/dev/null
done
echo "native: $hits hits in $n runs"
