#!/bin/sh
# aof.sh DIR FSYNC [DAEMONIZE]: one Redis server keeping its data in DIR as
# an append-only file (AOF), fsynced as `appendfsync FSYNC` says: `everysec`
# (the default: a background thread fsyncs the file once a second, so a
# power loss may lose the last second of acknowledged writes, as Redis's
# documentation says) or `always` (fsynced before the reply). No snapshots,
# no replicas: the example's power-loss specs (spec-power*.yaml). With
# DAEMONIZE `yes` the server forks into the background and this script
# returns, as a host's init script would start it (spec-daemon.yaml).
set -eu
dir=$1 fsync=$2 daemonize=${3:-no}
cat >"$dir/redis.conf" <<CONF
port 6379
bind 0.0.0.0
protected-mode no
save ""
appendonly yes
appendfsync $fsync
dir $dir
daemonize $daemonize
pidfile $dir/redis.pid
CONF
exec /usr/bin/redis-server "$dir/redis.conf"
