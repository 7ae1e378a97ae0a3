#!/bin/sh
# Names the follower that hashicorp/raft's leader picks for a leadership
# transfer when both followers are up to date (pickServer: the highest
# next index, ties to the first in the configuration): the first of n1, n2,
# n3 that does not lead now (leader.sh). For spec-election.yaml, whose
# holds hold the messages to the member about to become a candidate.
leader=$("$(dirname "$0")/leader.sh")
for n in n1 n2 n3; do
	if [ "$n" != "$leader" ]; then
		echo "$n"
		exit 0
	fi
done
