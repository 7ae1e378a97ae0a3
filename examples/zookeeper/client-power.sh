#!/bin/bash
# client-power.sh VALUE SETTLE HOST1 HOST2 HOST3: the client of the
# power-loss specs (spec-power.yaml, spec-crash.yaml). It waits until every
# member of the ensemble serves, creates /lockstep-1 … /lockstep-5 = VALUE
# through HOST1 (one zkCli.sh session), sleeps SETTLE seconds (virtual under
# lockstep: the faults' window and quiet period lie in it), waits until
# every member serves again, and then reads every znode it was told it
# created from every member, each read after a sync.
#
# Exit status: 0 when every read returns VALUE; 1 when a read after a
# successful sync misses a create that was acknowledged (no node, or
# another value: "VIOLATION" in the output), or when 3 attempts of a phase
# never got through (connection loss, a member out of the quorum: retried,
# not a failure by itself); 3 when the ensemble did not serve within 30 s.
set -u
value=$1 settle=$2 h1=$3 h2=$4 h3=$5
n=5
zk() {
	JVMFLAGS="-XX:+UseSerialGC -XX:-UsePerfData -XX:TieredStopAtLevel=1 -XX:-UseDynamicNumberOfCompilerThreads -Xshare:auto -Xmx64m" \
		/usr/share/zookeeper/bin/zkCli.sh -server "$1:2181" 2>&1
}

# srvr answers "Mode: leader" or "Mode: follower" once the member has
# joined a quorum; bash's /dev/tcp: no JVM for the wait.
serving() {
	local out
	out=$(exec 3<>"/dev/tcp/$1/2181" && printf srvr >&3 && cat <&3) 2>/dev/null
	case $out in *"Mode: "*) return 0 ;; esac
	return 1
}
wait_serving() {
	local h tries
	for h in "$h1" "$h2" "$h3"; do
		tries=0
		until serving "$h"; do
			tries=$((tries + 1))
			if [ $tries -ge 150 ]; then
				echo "client: $h not serving after 30 s" >&2
				exit 3
			fi
			sleep 0.2
		done
		echo "client: $h serves"
	done
}

wait_serving
# The creates: a znode is acknowledged when zkCli prints "Created PATH", or
# "Node already exists: PATH" on a later attempt (the first one's answer
# was lost, or it was acknowledged then).
declare -A acked
for try in 1 2 3; do
	cmds=()
	for i in $(seq 1 $n); do
		[ -n "${acked[$i]:-}" ] || cmds+=("create /lockstep-$i $value")
	done
	[ ${#cmds[@]} -eq 0 ] && break
	out=$(printf '%s\n' "${cmds[@]}" quit | zk "$h1")
	echo "$out"
	for i in $(seq 1 $n); do
		if printf '%s\n' "$out" | grep -qx -e "Created /lockstep-$i" -e "Node already exists: /lockstep-$i"; then
			acked[$i]=1
		fi
	done
	[ ${#acked[@]} -eq $n ] && break
	echo "client: create attempt $try: ${#acked[@]} of $n acknowledged; retrying" >&2
	sleep 1
done
echo "client: ${#acked[@]} of $n creates acknowledged: ${!acked[*]}"
[ ${#acked[@]} -gt 0 ] || { echo "client: FAILED: no create acknowledged in 3 attempts" >&2; exit 1; }

sleep "$settle"
wait_serving
# The reads: on each member, "sync PATH" then "get PATH" for every
# acknowledged znode. After "Sync is OK" the next line (watch events
# skipped) is the get's answer: VALUE, or "Node does not exist: PATH" for a
# lost create. judge prints "ok N" or "VIOLATION ...".
judge() {
	awk -v want="$value" '
		/^(WATCHER::|WatchedEvent |$)/ { next }
		/^Sync is OK$/ { synced = 1; next }
		synced {
			synced = 0
			if ($0 == want) { ok++ }
			else if ($0 ~ /^Node does not exist: / || $0 !~ /ConnectionLoss|SessionExpired|Not connected|Exception|^Connecting/) {
				print "VIOLATION: read after an acknowledged create and a sync returned: " $0
			}
		}
		END { print "ok " ok + 0 }'
}
want=$((3 * ${#acked[@]}))
for try in 1 2 3; do
	cmds=()
	for h in "$h1" "$h2" "$h3"; do
		cmds+=("connect $h:2181")
		for i in "${!acked[@]}"; do
			cmds+=("sync /lockstep-$i" "get /lockstep-$i")
		done
	done
	out=$(printf '%s\n' "${cmds[@]}" quit | zk "$h1")
	echo "$out"
	verdict=$(printf '%s\n' "$out" | judge)
	if printf '%s\n' "$verdict" | grep -q VIOLATION; then
		printf '%s\n' "$verdict" >&2
		exit 1
	fi
	if [ "$verdict" = "ok $want" ]; then
		echo "client: ok: ${#acked[@]} acknowledged znodes = $value on $h1, $h2 and $h3 (attempt $try)"
		exit 0
	fi
	echo "client: read attempt $try: $verdict of $want reads answered; retrying" >&2
	sleep 1
done
echo "client: FAILED: the acknowledged znodes were never read back from every member in 3 attempts" >&2
exit 1
