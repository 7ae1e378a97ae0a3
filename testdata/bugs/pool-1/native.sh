#!/usr/bin/env bash
# Runs pool-1 N times natively (no lockstep) on loopback and counts runs
# where the app exits non-zero (a job's result not found) or hangs
# (NATIVE_TIMEOUT s, default 5), or the store died. FIXED=1 native.sh N runs
# the fixed app. The app starts once the server listens, so that JVM
# start-up on a loaded machine does not eat into its limit.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/pool-1" && pwd)/pool1
fixed=${FIXED:+--fixed}
limit=${NATIVE_TIMEOUT:-5}
port=17950
. "$(dirname "$0")/../common/native.sh"
ports_free $port
ps=
trap 'kill $ps 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" server $port >/dev/null 2>&1 &
  ps=$!
  for ((w = 0; w < 400; w++)); do listening $port && break; sleep 0.05; done
  ok=1
  timeout "$limit" "$bin" app 127.0.0.1:$port 2 $fixed >/dev/null 2>/tmp/pool1-native.err || {
    ok=0
    echo "run $i: $(cat /tmp/pool1-native.err)" >&2
  }
  kill -0 $ps 2>/dev/null || ok=0
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $ps 2>/dev/null
  wait $ps 2>/dev/null
  ps=
done
rm -f /tmp/pool1-native.err
echo "native: $hits hits in $n runs"
