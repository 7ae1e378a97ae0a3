#!/usr/bin/env bash
# Installs what lockstep's build and tests need on a fresh Debian machine.
# `deps.sh bpf` adds the eBPF toolchain for `make generate`.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v rustc >/dev/null || need+=(rustc)
[ -x /usr/bin/python3 ] || need+=(python3)                       # testdata/bugs/move-1
[ -x /usr/bin/node ] || need+=(nodejs)                          # testdata/bugs/refresh-1
command -v ip >/dev/null || need+=(iproute2)
command -v erl >/dev/null || need+=(erlang-base) # tracer's Erlang timer tests
[ -n "$(ls -d /usr/lib/erlang/lib/mnesia-* 2>/dev/null)" ] || need+=(erlang-mnesia)
command -v chromium >/dev/null || need+=(chromium) # report's space-time diagram, checked in a browser
command -v etcd >/dev/null || need+=(etcd-server etcd-client) # examples/etcd under faults
[ -x /usr/bin/redis-server ] || need+=(redis-server)             # examples/redis, the RESP workload test
[ -x /usr/bin/redis-sentinel ] || need+=(redis-sentinel)         # examples/redis
[ -x /usr/share/zookeeper/bin/zkCli.sh ] || need+=(zookeeper)    # examples/zookeeper (ZooKeeper 3.8)
[ -x /usr/sbin/nats-server ] || need+=(nats-server)              # examples/nats (NATS 2.9)
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || need+=(rabbitmq-server) # examples/rabbitmq (RabbitMQ 3.10)
if [ "${1:-}" = bpf ]; then
  command -v clang >/dev/null || need+=(clang)
  command -v llvm-strip >/dev/null || need+=(llvm)
  [ -e /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
  command -v bpftool >/dev/null || need+=(bpftool)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "deps: missing ${need[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "deps: installing ${need[*]}"
  apt-get update -qq
  # Packaged services (etcd, redis) must not start on install: the tests
  # run their own in namespaces. policy-rc.d exit 101 tells invoke-rc.d so.
  policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    trap 'rm -f "$policy"' EXIT
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
