#!/usr/bin/env bash
# Runs stock-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (an answer or an audit other than its
# model's: an oversold item) or hangs, or a server died. FIXED=1 native.sh N
# runs the fixed stock server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/stock-1" && pwd)/stock1
fixed=${FIXED:+--fixed}
ps=17941 pa=17942 pb=17943
. "$(dirname "$0")/../common/native.sh"
ports_free $ps $pa $pb
p1= p2= p3=
trap 'kill $p1 $p2 $p3 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" stock $ps i1=2,i2=2,i3=2 $fixed >/dev/null 2>&1 &
  p1=$!
  "$bin" front a $pa 127.0.0.1:$ps >/dev/null 2>&1 &
  p2=$!
  "$bin" front b $pb 127.0.0.1:$ps >/dev/null 2>&1 &
  p3=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:$pa 127.0.0.1:$pb 127.0.0.1:$ps i1,i2,i3 >/dev/null 2>/tmp/stock1-native.err || ok=0
  tally $i $ok /tmp/stock1-native.err $p1 $p2 $p3
  p1= p2= p3=
done
rm -f /tmp/stock1-native.err
echo "native: $hits hits in $n runs"
