#!/bin/sh
# Names the host whose redis-server is a primary now, for faults aimed with
# target.probe: Redis starts every log line with its role (pid:M for a
# primary, pid:S for a replica, pid:X for a Sentinel), so the last M or S
# line of each host's output says what its server is. It runs in the
# trial's directory while every node is stopped; with two primaries (a
# split brain) the first is named, with none lockstep draws the host.
for f in r*.out; do
	[ -f "$f" ] || continue
	role=$(grep -E '^[0-9]+:[MS] ' "$f" | tail -n 1 | sed -E 's/^[0-9]+:([MS]) .*/\1/')
	[ "$role" = M ] && echo "${f%.out}"
done | head -n 1
