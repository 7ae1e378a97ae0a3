#!/bin/sh
# client.sh DIR ADDR1 ADDR2 [SETTLE]: waits SETTLE seconds (default 3)
# after both nodes listen, joins rabbit@ADDR2 to rabbit@ADDR1's cluster
# (rabbitmqctl stop_app, join_cluster, start_app, as RabbitMQ's clustering
# guide does it), waits until rabbit@ADDR1 sees both nodes running in its
# cluster (await_online_nodes), then publishes messages to a queue on
# rabbit@ADDR1 and consumes them through rabbit@ADDR2 (amqpcheck).
#
# Exit status: amqpcheck's (0 every message once and in order, 1 a message
# lost, duplicated or reordered, 2 a node unreachable or refusing), or 3
# when a rabbitmqctl step failed.
set -u
dir=$1 a1=$2 a2=$3 settle=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
export HOME="$dir"
# Each rabbitmqctl is an Erlang VM: the same flags as the nodes' (node.sh).
export ERL_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none +S 1:1 +SDcpu 1:1 +SDio 1 +IOs false"
ctl() {
	node=$1
	shift
	/usr/lib/rabbitmq/bin/rabbitmqctl --longnames \
		--erlang-cookie lockstep -n "rabbit@$node" "$@"
}
step() {
	echo "client: rabbitmqctl -n rabbit@$*"
	if ! ctl "$@"; then
		echo "client: rabbitmqctl -n rabbit@$* failed" >&2
		exit 3
	fi
}
# RabbitMQ 3.10's boot process learns that the boot finished by polling
# the boot state every 200 ms, and only then drops its "booting" marker; a
# stop_app before that leaves the marker, and the start_app after the join
# then returns ok without starting anything (rabbit:start_it sees the
# marker: "already booting"), so r2 never joins the running cluster. Wait
# out the poll, and a timer delay of up to 1 s (lockstep's default timing).
# spec-race.yaml sets SETTLE to 0 and lets lockstep find that race.
sleep "$settle"
step "$a2" stop_app
step "$a2" join_cluster "rabbit@$a1"
step "$a2" start_app
# start_app returns once rabbit@ADDR2 runs; rabbit@ADDR1 learns of it
# through its node monitor, a message later: wait for that (up to 30 s),
# rather than read cluster_status at once.
step "$a1" await_online_nodes 2 --timeout 30
echo "client: rabbit@$a1 and rabbit@$a2 run as one cluster"
exec "$here/bin/amqpcheck" -publish "$a1:5672" -consume "$a2:5672" -n 20
