#!/usr/bin/env bash
# Runs rpc-1 N times natively (no lockstep) on loopback and counts failures:
# client exit non-zero (a stale reply), a hang (the client still running after
# NATIVE_TIMEOUT s, default 5), or a dead server. `native.sh N --fixed` runs
# the fixed client instead. NATIVE_KEEP=DIR keeps both processes' output of
# every failing run there. The client starts once the server listens, so
# that JVM start-up on a loaded machine does not eat into the client's limit.
set -u
n=${1:-1000}
fixed=${2:-}
limit=${NATIVE_TIMEOUT:-5}
keep=${NATIVE_KEEP:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$(cd "$(dirname "$0")/../../bin/bugs/rpc-1" && pwd)/rpc1
hits=0 bug=0 hang=0 died=0 timeouts=0
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for ((i = 0; i < n; i++)); do
  "$bin" server 17600 a=1 b=2 c=3 >"$tmp/server" 2>&1 &
  ps=$!
  for ((w = 0; w < 400; w++)); do listening 17600 && break; sleep 0.05; done
  ok=1
  timeout "$limit" "$bin" client 127.0.0.1:17600 a=1 b=2 c=3 $fixed >"$tmp/client" 2>&1
  rc=$?
  if [ $rc = 124 ]; then ok=0; hang=$((hang + 1))
  elif [ $rc != 0 ]; then ok=0; bug=$((bug + 1)); fi
  kill -0 $ps 2>/dev/null || { ok=0; died=$((died + 1)); }
  # A GET that timed out without a wrong answer is not a failure, but count it.
  grep -q 'skipped' "$tmp/client" && timeouts=$((timeouts + 1))
  kill $ps 2>/dev/null
  wait $ps 2>/dev/null
  if [ $ok = 0 ]; then
    hits=$((hits + 1))
    [ -n "$keep" ] && mkdir -p "$keep/$i" && cp "$tmp"/* "$keep/$i/"
  fi
done
echo "native: client failed $bug, hang $hang, server died $died; runs with a GET timeout $timeouts" >&2
echo "native: $hits hits in $n runs"
