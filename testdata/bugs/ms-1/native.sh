#!/usr/bin/env bash
# Runs ms-1 N times natively (no lockstep) on loopback with the spec's fault
# injected Jepsen-style: w1 or w2 (at random) is killed (-9) at a uniformly
# random moment 50-150 ms after the client started (the spec's window) and
# restarted 10-100 ms later with the same command. Counts failures: client
# exit non-zero, a hang (timeout), or the caller dead (its crash is the bug).
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/ms-1" && pwd)/ms
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
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
  timeout 5 "$bin" client 127.0.0.1:17403 >/dev/null 2>&1 &
  cl=$!
  w=$((1 + RANDOM % 2))
  sleep "$(ms $((50 + RANDOM % 101)))"
  if [ $w = 1 ]; then kill -9 $p1; wait $p1; else kill -9 $p2; wait $p2; fi 2>/dev/null
  sleep "$(ms $((10 + RANDOM % 91)))"
  "$bin" member w$w 1740$w 127.0.0.1:17400 >/dev/null 2>&1 &
  if [ $w = 1 ]; then p1=$!; else p2=$!; fi
  ok=1
  wait $cl || ok=0
  kill -0 $pc 2>/dev/null || ok=0
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $pr $p1 $p2 $pc 2>/dev/null
  wait $pr $p1 $p2 $pc 2>/dev/null
done
echo "native: $hits hits in $n runs"
