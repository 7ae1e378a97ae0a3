#!/usr/bin/env bash
# Runs corrupt-1 N times natively (no lockstep) on loopback, with the faults
# injected as a Jepsen nemesis would: the backup is killed (SIGKILL) at a
# uniformly random moment between 0.1 s and 1 s after the client starts
# (the spec's from..until), one bit drawn at random in its log is flipped
# while it is down (TRUNCATE=1: the log loses a tail of a random length
# instead), and it is restarted on that log after an outage of 50-500 ms,
# at 1 s at the latest (the quiet period). Counts runs where the client
# exits non-zero (an acknowledged write read back wrong or missing, or no
# answer), or hangs, and prints the client's complaint of each such run.
# FIXED=1 native.sh N runs the fixed replicas.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/corrupt-1" && pwd)/corrupt1
fixed=${FIXED:+--fixed}
pport=17780 bport=17781
. "$(dirname "$0")/../common/native.sh"
ports_free $pport $bport
dir=$(mktemp -d /tmp/corrupt1-native.XXXXXX)
mkdir -p "$dir/p" "$dir/b"
pp= pb= pc=
trap 'kill -9 $pp $pb $pc 2>/dev/null; rm -rf "$dir"' EXIT
# damage flips one random bit of FILE, or with TRUNCATE set cuts it to a
# random shorter length; an empty file is left alone.
damage() {
  local size
  size=$(stat -c %s "$1")
  ((size > 0)) || return 0
  if [ -n "${TRUNCATE:-}" ]; then
    truncate -s $((RANDOM * 32768 % size)) "$1"
    return
  fi
  local off=$(((RANDOM * 32768 + RANDOM) % size)) bit=$((RANDOM % 8)) b
  b=$(od -An -tu1 -j "$off" -N1 "$1" | tr -d ' ')
  printf "\\$(printf %03o $((b ^ (1 << bit))))" | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}
hits=0
for ((i = 0; i < n; i++)); do
  rm -f "$dir/p/log" "$dir/b/log"
  "$bin" primary $pport "$dir/p" $fixed >/dev/null 2>&1 &
  pp=$!
  until listening $pport; do sleep 0.01; done
  "$bin" backup $bport 127.0.0.1:$pport "$dir/b" $fixed >/dev/null 2>&1 &
  pb=$!
  until listening $bport; do sleep 0.01; done
  timeout 10 "$bin" client 127.0.0.1:$pport 127.0.0.1:$bport 8 1300 >/dev/null 2>"$dir/client.err" &
  pc=$!
  at=$((100 + RANDOM % 900))               # the kill: 0.1-1 s after the client's start
  down=$((50 + RANDOM % 451))              # the outage: 50-500 ms
  ((at + down > 1000)) && down=$((1000 - at)) # restarted by the quiet period at 1 s
  sleep "$(ms $at)"
  kill -9 $pb 2>/dev/null
  wait $pb 2>/dev/null
  damage "$dir/b/log"
  sleep "$(ms $down)"
  "$bin" backup $bport 127.0.0.1:$pport "$dir/b" $fixed >/dev/null 2>&1 &
  pb=$!
  if ! wait $pc; then
    hits=$((hits + 1))
    echo "run $i: $(cat "$dir/client.err")" >&2
  fi
  kill -9 $pp $pb 2>/dev/null
  wait $pp $pb 2>/dev/null
  pp= pb= pc=
done
echo "native: $hits hits in $n runs"
