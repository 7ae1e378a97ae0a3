#!/usr/bin/env bash
# Runs mnesia-2 N times natively (no lockstep) on loopback and counts failures:
# client exit non-zero, a hang (the client still running after 5 s), or a dead server.
# `native.sh N --fixed` runs the fixed coordinator instead. NATIVE_TIMEOUT
# (default 5) is the client's limit in seconds: raise it on a loaded machine,
# where a JVM alone can take seconds to start.
# NATIVE_KEEP=DIR keeps the four processes' output of every failing run there.
# The servers are JVMs: the client starts once all three listen, so that JVM
# start-up on a loaded machine does not eat into the client's limit.
set -u
n=${1:-1000}
fixed=${2:-}
limit=${NATIVE_TIMEOUT:-5}
keep=${NATIVE_KEEP:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$(cd "$(dirname "$0")/../../bin/bugs/mnesia-2" && pwd)/mnesia2
hits=0 bug=0 hang=0 died=0
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for ((i = 0; i < n; i++)); do
  "$bin" coord 17500 127.0.0.1:17501 127.0.0.1:17502 $fixed >"$tmp/coord" 2>&1 &
  pc=$!
  "$bin" replica r1 17501 127.0.0.1:17500 >"$tmp/r1" 2>&1 &
  p1=$!
  "$bin" replica r2 17502 127.0.0.1:17500 >"$tmp/r2" 2>&1 &
  p2=$!
  for port in 17500 17501 17502; do
    for ((w = 0; w < 400; w++)); do listening $port && break; sleep 0.05; done
  done
  ok=1
  timeout "$limit" "$bin" client 127.0.0.1:17500 127.0.0.1:17501 127.0.0.1:17502 >"$tmp/client" 2>&1
  rc=$?
  if [ $rc = 124 ]; then ok=0; hang=$((hang + 1))
  elif [ $rc != 0 ]; then ok=0; bug=$((bug + 1)); fi
  for p in $pc $p1 $p2; do kill -0 $p 2>/dev/null || { ok=0; died=$((died + 1)); break; }; done
  kill $pc $p1 $p2 2>/dev/null
  wait $pc $p1 $p2 2>/dev/null
  if [ $ok = 0 ]; then
    hits=$((hits + 1))
    [ -n "$keep" ] && mkdir -p "$keep/$i" && cp "$tmp"/* "$keep/$i/"
  fi
done
echo "native: client failed $bug, hang $hang, server died $died" >&2
echo "native: $hits hits in $n runs"
