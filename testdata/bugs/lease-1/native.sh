#!/usr/bin/env bash
# Runs lease-1 N times natively (no lockstep) on loopback and counts failures:
# a worker exits non-zero (a lost update), a hang (timeout), or a dead server.
# FIXED=1 native.sh N runs the fencing store instead.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/lease-1" && pwd)/lease1
fixed=${FIXED:+--fixed}
lp=17740 sp=17741
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in $lp $sp; do
  if listening $p; then
    echo "native.sh: port $p is in use; another run would mix with this one" >&2
    exit 2
  fi
done
hits=0
pl= ps=
trap 'kill $pl $ps 2>/dev/null' EXIT
for ((i = 0; i < n; i++)); do
  "$bin" lockd $lp >/dev/null 2>&1 &
  pl=$!
  "$bin" store $sp $fixed >/dev/null 2>&1 &
  ps=$!
  timeout 5 "$bin" worker a 127.0.0.1:$lp 127.0.0.1:$sp 2 >/dev/null 2>&1 &
  pa=$!
  timeout 5 "$bin" worker b 127.0.0.1:$lp 127.0.0.1:$sp 2 >/dev/null 2>&1 &
  pb=$!
  ok=1
  wait $pa || ok=0
  wait $pb || ok=0
  for p in $pl $ps; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $pl $ps 2>/dev/null
  wait $pl $ps 2>/dev/null
  pl= ps=
done
echo "native: $hits hits in $n runs"
