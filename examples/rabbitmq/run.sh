#!/bin/sh
# Runs the RabbitMQ example: installs Debian's rabbitmq-server if it is
# missing (as root, without starting its service), builds lockstep and the
# AMQP client, and runs N trials (default 20).
#   examples/rabbitmq/run.sh [N] [extra lockstep run flags...]
# e.g. examples/rabbitmq/run.sh 20 -j 2 -o /tmp/rabbitmq-out
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-20}
[ $# -gt 0 ] && shift

if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "run.sh: RabbitMQ is not installed; as root: apt-get install rabbitmq-server" >&2
		exit 2
	fi
	# Debian starts a RabbitMQ service on install; the trials run their
	# own nodes in namespaces. policy-rc.d exit 101 tells invoke-rc.d not
	# to start it.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q rabbitmq-server
	[ -n "$policy" ] && rm -f "$policy"
fi

make -s -C "$root" build
make -s -C "$here/amqp"
cd "$root"
exec ./bin/lockstep run -q -n "$n" "$@" "$here/spec.yaml"
