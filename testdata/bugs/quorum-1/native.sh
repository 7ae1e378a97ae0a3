#!/usr/bin/env bash
# Runs quorum-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (an outcome other than its model's: a
# refused transfer committed) or hangs, or a server died. FIXED=1 native.sh N
# runs the fixed coordinator.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/quorum-1" && pwd)/quorum1
fixed=${FIXED:+--fixed}
cp=17990 p1=17991 p2=17992
. "$(dirname "$0")/../common/native.sh"
ports_free $cp $p1 $p2
pa= pb= pc=
trap 'kill $pa $pb $pc 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" part p1 $p1 >/dev/null 2>&1 &
  pa=$!
  "$bin" part p2 $p2 >/dev/null 2>&1 &
  pb=$!
  "$bin" coord $cp 127.0.0.1:$p1 127.0.0.1:$p2 $fixed >/dev/null 2>&1 &
  pc=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:$cp 127.0.0.1:$p1 127.0.0.1:$p2 2 >/dev/null 2>/tmp/quorum1-native.err || ok=0
  tally $i $ok /tmp/quorum1-native.err $pa $pb $pc
  pa= pb= pc=
done
rm -f /tmp/quorum1-native.err
echo "native: $hits hits in $n runs"
