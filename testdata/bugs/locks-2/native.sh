#!/usr/bin/env bash
# Runs locks-2 N times natively (no lockstep) on loopback with distinct ports and counts
# the failures lockstep detects: a client exiting non-zero, a hang (timeout 5), or the
# server dying.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/locks-2" && pwd)/locks2
hits=0
for ((i = 0; i < n; i++)); do
  sp=$((21000 + 2 * (i % 2000)))
  hp=$((sp + 1))
  "$bin" server $sp >/dev/null 2>&1 &
  s=$!
  "$bin" holder 127.0.0.1:$sp $hp >/dev/null 2>&1 &
  h=$!
  timeout 5 "$bin" waiter 127.0.0.1:$sp 127.0.0.1:$hp >/dev/null 2>&1
  wrc=$?
  timeout 5 tail --pid=$h -f /dev/null
  if kill -0 $h 2>/dev/null; then hrc=124; kill $h 2>/dev/null; wait $h 2>/dev/null; else wait $h; hrc=$?; fi
  kill -0 $s 2>/dev/null; src=$?
  kill $s 2>/dev/null
  wait $s 2>/dev/null
  if [ $wrc -ne 0 ] || [ $hrc -ne 0 ] || [ $src -ne 0 ]; then hits=$((hits + 1)); fi
done
echo "native: $hits hits in $n runs"
