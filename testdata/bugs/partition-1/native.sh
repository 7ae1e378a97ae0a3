#!/usr/bin/env bash
# Runs partition-1 N times natively (no lockstep) and injects the fault as a
# Jepsen nemesis would: s1 runs in one network namespace, s2 and the client
# in another, joined through a third (a router); a partition takes the
# router's two links down, so that every packet between the sides is dropped
# silently both ways (TCP retransmits, connects time out), at a uniformly
# random moment 0.2-2.5 s after the client starts, for 0.2-2 s, healed at
# 2.5 s at the latest (the spec's from, until and max_outage). Counts runs
# where the client exits non-zero (a stale read, or no primary) or hangs.
# A failing run's client output goes to standard error.
# FIXED=1 native.sh N runs the fixed servers. Needs root (ip netns).
set -u
n=${1:-300}
bin=$(cd "$(dirname "$0")/../../bin/bugs/partition-1" && pwd)/partition1
fixed=${FIXED:+--fixed}
A=pt1-a B=pt1-b R=pt1-r
pids=
cleanup() {
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  wait 2>/dev/null
  ip netns del $A 2>/dev/null
  ip netns del $B 2>/dev/null
  ip netns del $R 2>/dev/null
}
trap cleanup EXIT
for ns in $A $B $R; do
  if ip netns list | grep -qw "$ns"; then
    echo "native.sh: namespace $ns exists; another run is under way (or remove it)" >&2
    trap - EXIT
    exit 2
  fi
done
set -e
for ns in $A $B $R; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add pt1-a0 netns $A type veth peer name pt1-ra netns $R
ip link add pt1-b0 netns $B type veth peer name pt1-rb netns $R
ip -n $A addr add 10.211.1.2/24 dev pt1-a0
ip -n $B addr add 10.211.2.2/24 dev pt1-b0
ip -n $R addr add 10.211.1.1/24 dev pt1-ra
ip -n $R addr add 10.211.2.1/24 dev pt1-rb
for l in "$A pt1-a0" "$B pt1-b0" "$R pt1-ra" "$R pt1-rb"; do set -- $l; ip -n $1 link set $2 up; done
ip -n $A route add default via 10.211.1.1
ip -n $B route add default via 10.211.2.1
ip netns exec $R sysctl -qw net.ipv4.ip_forward=1
set +e
s1=10.211.1.2:7000 s2=10.211.2.2:7000
cut() { ip -n $R link set pt1-ra $1; ip -n $R link set pt1-rb $1; }
listening() { ip netns exec $1 bash -c "(exec 3<>/dev/tcp/${2%:*}/${2#*:}) 2>/dev/null"; }
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); } # milliseconds → seconds for sleep
hits=0
log=$(mktemp)
trap 'cleanup; rm -f "$log"' EXIT
for ((i = 0; i < n; i++)); do
  ip netns exec $A "$bin" server s1 7000 primary $fixed >/dev/null 2>&1 &
  p1=$!
  until listening $A $s1; do sleep 0.01; done
  ip netns exec $B "$bin" server s2 7000 backup $s1 $fixed >/dev/null 2>&1 &
  p2=$!
  until listening $B $s2; do sleep 0.01; done
  ip netns exec $B timeout 15 "$bin" client c $s1 $s2 4000 >"$log" 2>&1 &
  c=$!
  pids="$p1 $p2 $c"
  at=$((200 + RANDOM % 2300))                  # the partition: 0.2-2.5 s after the client's start
  dur=$((200 + RANDOM % 1801))                 # lasting 0.2-2 s
  ((at + dur > 2500)) && dur=$((2500 - at))    # healed by the quiet period at 2.5 s
  sleep "$(ms $at)"
  cut down
  sleep "$(ms $dur)"
  cut up
  if ! wait $c; then
    hits=$((hits + 1))
    echo "native: run $((i + 1)) failed (partition at ${at} ms for ${dur} ms):" >&2
    tail -n 20 "$log" | sed 's/^/  /' >&2
  fi
  echo "native: run $((i + 1)), $hits hits" >&2
  kill -9 $p1 $p2 2>/dev/null
  wait $p1 $p2 2>/dev/null
  pids=
done
echo "native: $hits hits in $n runs"
