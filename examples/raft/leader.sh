#!/bin/sh
# Names the member that leads now, for faults aimed with target.probe: of
# the members whose last state change (raft's "entering ... state" line on
# their stderr) was to leader, the one that changed last. It runs in the
# trial's directory while every node is stopped; no output (no leader yet)
# lets lockstep draw the node.
for f in n*.err; do
	grep -h ': entering .* state' "$f" | tail -n 1
done | grep ': entering leader state' | sort | tail -n 1 | sed -n 's/.*raft-\([^:]*\): .*/\1/p'
