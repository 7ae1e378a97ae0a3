#!/usr/bin/env bash
# Runs gproc-1 N times natively (no lockstep) on loopback with the spec's
# fault injected Jepsen-style: n2 is killed (-9) at a uniformly random moment
# 50-150 ms after the start (the spec's window) and restarted 0-10 ms later
# with the same command and data directory (its incarnation file). Counts
# failures: driver exit non-zero (split views), a hang (timeout), or a dead
# server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/gproc-1" && pwd)/gproc
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
hits=0
for ((i = 0; i < n; i++)); do
  d=$(mktemp -d)
  "$bin" n1 17200 >/dev/null 2>&1 &
  p1=$!
  "$bin" n2 17201 127.0.0.1:17200 "$d" >/dev/null 2>&1 &
  p2=$!
  "$bin" monitor 127.0.0.1:17200 127.0.0.1:17201 >/dev/null 2>&1 &
  pm=$!
  timeout 5 "$bin" driver 127.0.0.1:17200 127.0.0.1:17201 400 >/dev/null 2>&1 &
  dr=$!
  sleep "$(ms $((50 + RANDOM % 101)))"
  kill -9 $p2 2>/dev/null
  wait $p2 2>/dev/null
  sleep "$(ms $((RANDOM % 11)))"
  "$bin" n2 17201 127.0.0.1:17200 "$d" >/dev/null 2>&1 &
  p2=$!
  ok=1
  wait $dr || ok=0
  for p in $p1 $pm $p2; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $p1 $pm $p2 2>/dev/null
  wait $p1 $pm $p2 2>/dev/null
  rm -rf "$d"
done
echo "native: $hits hits in $n runs"
