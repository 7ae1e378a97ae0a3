#!/usr/bin/env bash
# Runs backup-1 N times natively (no lockstep) on loopback and counts runs
# where the client exits non-zero (a write not read back from the backup)
# or hangs, or a server died. FIXED=1 native.sh N runs the synchronous primary.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/backup-1" && pwd)/backup1
fixed=${FIXED:+--fixed}
pp=17900 bp=17901
. "$(dirname "$0")/../common/native.sh"
ports_free $pp $bp
pb= pp_=
trap 'kill $pb $pp_ 2>/dev/null' EXIT
hits=0
for ((i = 0; i < n; i++)); do
  "$bin" backup $bp >/dev/null 2>&1 &
  pb=$!
  "$bin" primary $pp 127.0.0.1:$bp $fixed >/dev/null 2>&1 &
  pp_=$!
  ok=1
  timeout 5 "$bin" client 127.0.0.1:$pp 127.0.0.1:$bp 2 >/dev/null 2>/tmp/backup1-native.err || {
    ok=0
    echo "run $i: $(cat /tmp/backup1-native.err)" >&2
  }
  for p in $pb $pp_; do kill -0 $p 2>/dev/null || ok=0; done
  [ $ok = 1 ] || hits=$((hits + 1))
  kill $pb $pp_ 2>/dev/null
  wait $pb $pp_ 2>/dev/null
  pb= pp_=
done
rm -f /tmp/backup1-native.err
echo "native: $hits hits in $n runs"
