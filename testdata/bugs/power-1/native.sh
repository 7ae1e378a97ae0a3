#!/usr/bin/env bash
# Runs power-1 N times natively (no lockstep) on loopback, with the only
# fault a Jepsen nemesis can inject without a file system of its own: kvd is
# killed (SIGKILL) at a uniformly random moment between 0.1 s and 1 s after
# the client starts (the spec's from..until) and restarted on the same
# journal after an outage of 50-500 ms, at 1 s at the latest (the quiet
# period). A killed process's writes stay in the page cache, so this finds
# nothing: the bug needs a power loss, which takes LazyFS or a virtual
# machine natively. Counts runs where the client exits non-zero (a lost
# acknowledged write, or no answer), or hangs, and prints the client's
# complaint of each such run. FIXED=1 native.sh N runs the fixed server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/power-1" && pwd)/power1
fixed=${FIXED:+--fixed}
port=17760
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if listening $port; then
  echo "native.sh: port $port is in use; another run would mix with this one" >&2
  exit 2
fi
dir=$(mktemp -d /tmp/power1-native.XXXXXX)
pk= pc=
trap 'kill -9 $pk $pc 2>/dev/null; rm -rf "$dir"' EXIT
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); } # milliseconds → seconds for sleep
hits=0
for ((i = 0; i < n; i++)); do
  rm -f "$dir/journal"
  "$bin" kvd $port "$dir" $fixed >/dev/null 2>&1 &
  pk=$!
  until listening $port; do sleep 0.01; done
  timeout 10 "$bin" client 127.0.0.1:$port 5 1300 >/dev/null 2>"$dir/client.err" &
  pc=$!
  at=$((100 + RANDOM % 900))               # the kill: 0.1-1 s after the client's start
  down=$((50 + RANDOM % 451))              # the outage: 50-500 ms
  ((at + down > 1000)) && down=$((1000 - at)) # restarted by the quiet period at 1 s
  sleep "$(ms $at)"
  kill -9 $pk 2>/dev/null
  wait $pk 2>/dev/null
  sleep "$(ms $down)"
  "$bin" kvd $port "$dir" $fixed >/dev/null 2>&1 &
  pk=$!
  if ! wait $pc; then
    hits=$((hits + 1))
    echo "run $i: $(cat "$dir/client.err")" >&2
  fi
  kill -9 $pk 2>/dev/null
  wait $pk 2>/dev/null
  pk= pc=
done
echo "native: $hits hits in $n runs"
