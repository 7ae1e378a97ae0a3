#!/bin/sh
# Runs the ZooKeeper example: installs Debian's zookeeper 3.8 if it is
# missing (as root), builds lockstep, and runs N trials (default 20).
#   examples/zookeeper/run.sh [N] [extra lockstep run flags...]
# e.g. examples/zookeeper/run.sh 100 --seed 7 -o /tmp/zk-out
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-20}
[ $# -gt 0 ] && shift

if [ ! -x /usr/share/zookeeper/bin/zkCli.sh ] || [ ! -r /usr/share/java/zookeeper.jar ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "run.sh: ZooKeeper is not installed; as root: apt-get install zookeeper" >&2
		exit 2
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q zookeeper
	# Debian's zookeeper package ships no service that starts on install
	# (zookeeperd does); nothing to stop.
fi

make -s -C "$root" build
cd "$root"
exec ./bin/lockstep run -q -n "$n" "$@" "$here/spec.yaml"
