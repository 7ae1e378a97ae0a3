#!/bin/sh
# Runs the Redis + Sentinel example: installs Debian's redis-server and
# redis-sentinel if they are missing (as root), builds lockstep and the
# workload client, and runs N trials (default 20).
#   examples/redis/run.sh [N] [extra lockstep run flags...]
# e.g. examples/redis/run.sh 100 --seed 7 -o /tmp/redis-out
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-20}
[ $# -gt 0 ] && shift

if [ ! -x /usr/bin/redis-server ] || [ ! -x /usr/bin/redis-sentinel ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "run.sh: Redis is not installed; as root: apt-get install redis-server redis-sentinel" >&2
		exit 2
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server redis-sentinel
	# Debian starts the packaged services on install; they listen on the
	# host's loopback only and do not disturb the trials' namespaces.
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now redis-server redis-sentinel >/dev/null 2>&1 || true; fi
fi

make -s -C "$root" build
make -s -C "$root/testdata/workload"
cd "$root"
exec ./bin/lockstep run -q -n "$n" "$@" "$here/spec.yaml"
