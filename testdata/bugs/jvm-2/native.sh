#!/usr/bin/env bash
# Runs jvm-2 N times natively (no lockstep) on loopback and counts runs
# where the app exits non-zero (a payment declined for an order it had
# submitted) or hangs (NATIVE_TIMEOUT s, default 5), or a service died.
# FIXED=1 native.sh N runs the fixed app. The app starts once both services
# listen, so that JVM start-up on a loaded machine does not eat into its
# limit. Each failure's line is printed: its order id and timestamp differ
# from run to run.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/jvm-2" && pwd)/jvm2
fixed=${FIXED:+--fixed}
limit=${NATIVE_TIMEOUT:-5}
op=17970 pp=17971
. "$(dirname "$0")/../common/native.sh"
ports_free $op $pp
po= pp_=
trap 'kill $po $pp_ 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" orders $op >/dev/null 2>&1 &
  po=$!
  "$bin" payments $pp 127.0.0.1:$op >/dev/null 2>&1 &
  pp_=$!
  for p in $op $pp; do
    for ((w = 0; w < 400; w++)); do listening $p && break; sleep 0.05; done
  done
  ok=1
  timeout "$limit" "$bin" app 127.0.0.1:$op 127.0.0.1:$pp 2 $fixed >/dev/null 2>/tmp/jvm2-native.err || {
    ok=0
    echo "run $i: $(cat /tmp/jvm2-native.err)" >&2
  }
  kill -0 $po 2>/dev/null || ok=0
  kill -0 $pp_ 2>/dev/null || ok=0
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $po $pp_ 2>/dev/null
  wait $po $pp_ 2>/dev/null
  po= pp_=
done
rm -f /tmp/jvm2-native.err
echo "native: $hits hits in $n runs"
