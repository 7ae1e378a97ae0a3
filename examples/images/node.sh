#!/bin/sh
# node.sh PRIMARY SELF REPLICA...: one Redis host of the example, run from
# the lockstep-redis image: a redis-server (a replica of PRIMARY unless
# SELF is it) and a Sentinel watching the primary, as in examples/redis,
# with their files in the image's /var/lib/redis (the node's writable
# layer). Hosts are named, and looked up in /etc/hosts (lockstep's hosts
# file) with shell builtins only: the image has no getent.
set -eu
addr() {
	while read -r ip name rest; do
		if [ "$name" = "$1" ]; then
			echo "$ip"
			return
		fi
	done </etc/hosts
	echo "$1"
}
primary=$(addr "$1") self=$(addr "$2")
shift 2
dir=/var/lib/redis
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
	echo "sentinel known-replica mymaster $(addr "$r") 6379" >>"$dir/sentinel.conf"
done
/usr/bin/redis-sentinel "$dir/sentinel.conf" &
exec /usr/bin/redis-server "$dir/redis.conf"
