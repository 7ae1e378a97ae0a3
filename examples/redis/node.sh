#!/bin/sh
# node.sh DIR PRIMARY SELF REPLICA...: one Redis host of the example: a
# redis-server (a replica of the PRIMARY address unless SELF is it) and a
# Sentinel that watches the primary, both keeping their files in DIR. The
# Sentinel is told the replicas' addresses, as it would have written them
# to its file after its first look at the primary, so a failover can
# happen from the start rather than after its first 10-second refresh.
# A full resynchronisation writes the snapshot to a file first
# (repl-diskless-sync no): streamed through a pipe from the forked child,
# its chunks would depend on real time, and a replay could not follow.
# The Sentinel runs in the background; the server is the node's main
# process.
set -eu
dir=$1 primary=$2 self=$3
shift 3
cat >"$dir/redis.conf" <<CONF
port 6379
bind 0.0.0.0
protected-mode no
save ""
appendonly no
repl-diskless-sync no
dir $dir
CONF
if [ "$self" != "$primary" ]; then
	echo "replicaof $primary 6379" >>"$dir/redis.conf"
fi
cat >"$dir/sentinel.conf" <<CONF
port 26379
bind 0.0.0.0
protected-mode no
dir $dir
sentinel monitor mymaster $primary 6379 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 4000
sentinel parallel-syncs mymaster 1
CONF
for r in "$@"; do
	echo "sentinel known-replica mymaster $r 6379" >>"$dir/sentinel.conf"
done
sentinel=/usr/bin/redis-sentinel
[ -x "$sentinel" ] || sentinel="/usr/bin/redis-server --sentinel"
$sentinel "$dir/sentinel.conf" &
exec /usr/bin/redis-server "$dir/redis.conf"
