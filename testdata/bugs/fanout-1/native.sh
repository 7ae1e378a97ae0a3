#!/usr/bin/env bash
# Runs fanout-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (a stale read of its own acknowledged
# write) or hangs, or a server died. FIXED=1 native.sh N runs the fixed
# client. The client starts once every server listens.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/fanout-1" && pwd)/fanout1
fixed=${FIXED:+--fixed}
cp=17980 p1=17981 p2=17982 p3=17983
. "$(dirname "$0")/../common/native.sh"
ports_free $cp $p1 $p2 $p3
p1d= p2d= p3d= pcd=
trap 'kill $p1d $p2d $p3d $pcd 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" replica r1 $p1 >/dev/null 2>&1 &
  p1d=$!
  "$bin" replica r2 $p2 >/dev/null 2>&1 &
  p2d=$!
  "$bin" replica r3 $p3 >/dev/null 2>&1 &
  p3d=$!
  "$bin" coord $cp 2 127.0.0.1:$p1 127.0.0.1:$p2 127.0.0.1:$p3 >/dev/null 2>&1 &
  pcd=$!
  for p in $p1 $p2 $p3 $cp; do until listening $p; do sleep 0.01; done; done
  ok=1
  timeout 5 "$bin" client 127.0.0.1:$cp 4 127.0.0.1:$p3 127.0.0.1:$p1 $fixed >/dev/null 2>/tmp/fanout1-native.err || {
    ok=0
    echo "run $i: $(cat /tmp/fanout1-native.err)" >&2
  }
  for p in $p1d $p2d $p3d $pcd; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $p1d $p2d $p3d $pcd 2>/dev/null
  wait $p1d $p2d $p3d $pcd 2>/dev/null
  p1d= p2d= p3d= pcd=
done
rm -f /tmp/fanout1-native.err
echo "native: $hits hits in $n runs"
