#!/usr/bin/env bash
# Runs crash-1 N times natively (no lockstep) on loopback, with the fault
# injected as a Jepsen nemesis would: kvd is killed (SIGKILL) at a uniformly
# random moment between 0.1 s and 1 s after the client starts (the spec's
# from..until) and restarted on the same journal after an outage of 50-500 ms
# (a tenth of max_outage to all of it), at 1 s at the latest (the quiet
# period). Counts runs where the client exits non-zero (a lost acknowledged
# write, or no answer), or hangs, and prints the client's complaint of each
# such run. FIXED=1 native.sh N runs the fixed server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/crash-1" && pwd)/crash1
fixed=${FIXED:+--fixed}
port=17750
. "$(dirname "$0")/../common/native.sh"
ports_free $port
kill_restart_runs "$n" "$bin" $port "$(mktemp -d /tmp/crash1-native.XXXXXX)" 'journal'
