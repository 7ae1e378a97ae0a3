#!/usr/bin/env bash
# Runs ra-1 N times natively (no lockstep) on loopback and counts failures:
# client exit non-zero, a hang (timeout), or a dead server (the follower's panic).
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/ra-1" && pwd)/ra1
fixed=${FIXED:+--fixed}
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" leader 17300 >/dev/null 2>&1 &
  pl=$!
  "$bin" follower 17301 127.0.0.1:17300 $fixed >/dev/null 2>&1 &
  pf=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:17300 127.0.0.1:17301 >/dev/null 2>&1 || ok=0
  for p in $pl $pf; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $pl $pf 2>/dev/null
  wait $pl $pf 2>/dev/null
done
echo "native: $hits hits in $n runs"
