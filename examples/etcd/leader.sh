#!/bin/sh
# Names the member that leads now, for faults aimed with target.probe: of
# the members whose last raft state change on their stderr ("became
# leader at term N", etcd's zap log) was to leader, the one of the highest
# term. It runs in the trial's directory while every member is stopped; no
# output (no leader yet) lets lockstep draw the member.
for f in e*.err; do
	[ -f "$f" ] || continue
	grep -ho 'became [a-z-]* at term [0-9]*' "$f" | tail -n 1 |
		sed -n "s/^became leader at term \([0-9]*\)$/\1 ${f%.err}/p"
done | sort -n | tail -n 1 | cut -d' ' -f2
