#!/bin/bash
# client.sh VALUE HOST1 HOST2 HOST3: waits until every member of the
# ensemble serves, then, in one zkCli.sh (one JVM), creates /lockstep =
# VALUE through HOST1 and reads it back from HOST2 and from HOST3, each read
# after a sync: a follower may not have applied yet a write the quorum
# acknowledged, and sync makes it catch up with the leader first.
#
# Exit status: 0 when both reads return VALUE; 1 when a read after a
# successful sync returns anything but VALUE (a stale read: "VIOLATION" in
# the output) or after 3 attempts that never got both reads answered
# (connection loss, a member that left the quorum: unavailability, retried,
# is not a failure by itself); 3 when the ensemble did not serve within 30 s.
set -u
value=$1 h1=$2 h2=$3 h3=$4

# srvr, one of ZooKeeper's four-letter words, answers "Mode: leader" or
# "Mode: follower" once the member has joined a quorum, and "not currently
# serving requests" before. bash's /dev/tcp: no JVM for the wait.
serving() {
	local out
	out=$(exec 3<>"/dev/tcp/$1/2181" && printf srvr >&3 && cat <&3) 2>/dev/null
	case $out in *"Mode: "*) return 0 ;; esac
	return 1
}
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

# zkCli.sh reads commands from stdin when it has no terminal; connect
# replaces the session with one on another member, and the commands after
# it wait for that session. Its own log goes nowhere (no slf4j binding on
# its classpath); what it prints is each command's result.
attempt() {
	printf '%s\n' "create /lockstep $value" \
		"connect $h2:2181" "sync /lockstep" "get /lockstep" \
		"connect $h3:2181" "sync /lockstep" "get /lockstep" "quit" |
		JVMFLAGS="-XX:+UseSerialGC -XX:-UsePerfData -XX:TieredStopAtLevel=1 -XX:-UseDynamicNumberOfCompilerThreads -Xshare:auto -Xmx64m" \
			/usr/share/zookeeper/bin/zkCli.sh -server "$h1:2181" 2>&1
}
# judge reads zkCli's output: the line after "Sync is OK" (skipping watch
# events) is the get's answer. Prints "ok N" (N reads returned VALUE) or
# "VIOLATION ..." for a read that returned something else without a
# connection error.
judge() {
	awk -v want="$value" '
		/^(WATCHER::|WatchedEvent |$)/ { next }
		/^(Created \/lockstep|Node already exists: \/lockstep)$/ { created = 1; next }
		/^Sync is OK$/ { synced = 1; next }
		synced {
			synced = 0
			if ($0 == want) { ok++ }
			else if (created && $0 !~ /ConnectionLoss|SessionExpired|Not connected|Exception/) {
				print "VIOLATION: read after an acknowledged create and a sync returned: " $0
			}
		}
		END { print "ok " ok + 0 }'
}
for try in 1 2 3; do
	out=$(attempt)
	echo "$out"
	verdict=$(printf '%s\n' "$out" | judge)
	if printf '%s\n' "$verdict" | grep -q VIOLATION; then
		printf '%s\n' "$verdict" >&2
		exit 1
	fi
	if [ "$verdict" = "ok 2" ]; then
		echo "client: ok: /lockstep = $value on $h2 and $h3 (attempt $try)"
		exit 0
	fi
	echo "client: attempt $try: $verdict of 2 reads answered; retrying" >&2
	sleep 1
done
echo "client: FAILED: /lockstep never read back from both $h2 and $h3 in 3 attempts" >&2
exit 1
