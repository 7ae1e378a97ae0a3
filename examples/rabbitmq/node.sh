#!/bin/sh
# node.sh DIR ADDR [-detached]: one RabbitMQ 3.10 node (Debian's rabbitmq-server) named
# rabbit@ADDR, all of its state (database, logs, cookie, pid file) under DIR
# (the trial's {{tmp}} for the node), listening for AMQP on ADDR:5672 and
# for Erlang distribution on 25672. Every Erlang VM the node runs (the
# broker, and the one it starts to make sure epmd runs) has one scheduler
# of each kind, schedulers that do not spin before sleeping and do not poll
# (see README.md, "The spec"). With -detached the broker's Erlang VM
# forks into the background and this script returns (spec-daemon.yaml).
set -eu
dir=$1 addr=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/mnesia" "$dir/log"
export HOME="$dir"
export RABBITMQ_NODENAME="rabbit@$addr" RABBITMQ_USE_LONGNAME=true
export RABBITMQ_NODE_IP_ADDRESS="$addr" RABBITMQ_NODE_PORT=5672 RABBITMQ_DIST_PORT=25672
export RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log"
export RABBITMQ_PID_FILE="$dir/pid" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
export RABBITMQ_CONFIG_FILE="$here/rabbitmq.conf" RABBITMQ_ERLANG_COOKIE=lockstep
# ERL_FLAGS, not RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: the VM the broker
# starts for epmd gets it too.
export ERL_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none +S 1:1 +SDcpu 1:1 +SDio 1 +IOs false"
exec /usr/lib/rabbitmq/bin/rabbitmq-server "$@"
