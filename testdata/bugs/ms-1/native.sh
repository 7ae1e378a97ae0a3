#!/usr/bin/env bash
# Runs ms-1 N times natively (no lockstep) on loopback and counts failures:
# client exit non-zero, a hang (timeout), or a dead server (the caller's crash).
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/ms-1" && pwd)/ms
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" registry 17400 >/dev/null 2>&1 &
  pr=$!
  "$bin" member w1 17401 127.0.0.1:17400 >/dev/null 2>&1 &
  p1=$!
  "$bin" member w2 17402 127.0.0.1:17400 >/dev/null 2>&1 &
  p2=$!
  "$bin" caller 17403 127.0.0.1:17400 w1=127.0.0.1:17401 w2=127.0.0.1:17402 >/dev/null 2>&1 &
  pc=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:17403 127.0.0.1:17401 127.0.0.1:17402 >/dev/null 2>&1 || ok=0
  for p in $pr $p1 $p2 $pc; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $pr $p1 $p2 $pc 2>/dev/null
  wait $pr $p1 $p2 $pc 2>/dev/null
done
echo "native: $hits hits in $n runs"
