#!/bin/sh
# Runs the etcd example: installs Debian's etcd 3.4 if it is missing (as
# root), builds lockstep and the client, and runs N trials (default 20).
#   examples/etcd/run.sh [N] [extra lockstep run flags...]
# e.g. examples/etcd/run.sh 200 --seed 7 -o /tmp/etcd-out
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-20}
[ $# -gt 0 ] && shift

if [ ! -x /usr/bin/etcd ] || [ ! -x /usr/bin/etcdctl ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "run.sh: etcd is not installed; as root: apt-get install etcd-server etcd-client" >&2
		exit 2
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server etcd-client
	# Debian starts a single-node etcd service on install; it listens on
	# loopback only and does not disturb the trials' namespaces, but it is
	# not needed here.
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
fi

make -s -C "$root" build
make -s -C "$here/client"
cd "$root"
exec ./bin/lockstep run -q -n "$n" "$@" "$here/spec.yaml"
