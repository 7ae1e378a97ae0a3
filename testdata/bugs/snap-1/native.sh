#!/usr/bin/env bash
# Runs snap-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (an acknowledged write missing from the
# follower: a rollback) or hangs, or a server died. FIXED=1 native.sh N
# runs the fixed follower.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/snap-1" && pwd)/snap1
fixed=${FIXED:+--fixed}
fp=17800 sp=17801 lp=17802
. "$(dirname "$0")/../common/native.sh"
ports_free $fp $sp $lp
pf= ps= pl=
trap 'kill $pf $ps $pl 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" follower $fp $fixed >/dev/null 2>&1 &
  pf=$!
  "$bin" snapsvc $sp 127.0.0.1:$fp >/dev/null 2>&1 &
  ps=$!
  "$bin" leader $lp 127.0.0.1:$sp 127.0.0.1:$fp >/dev/null 2>&1 &
  pl=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:$lp 127.0.0.1:$fp 6 >/dev/null 2>/tmp/snap1-native.err || ok=0
  tally $i $ok /tmp/snap1-native.err $pf $ps $pl
  pf= ps= pl=
done
rm -f /tmp/snap1-native.err
echo "native: $hits hits in $n runs"
