#!/usr/bin/env bash
# Runs power-1 N times natively (no lockstep) on loopback, with the only
# fault a Jepsen nemesis can inject without a file system of its own: kvd is
# killed (SIGKILL) at a uniformly random moment between 0.1 s and 1 s after
# the client starts (the spec's from..until) and restarted on the same
# journal after an outage of 50-500 ms, at 1 s at the latest (the quiet
# period). A killed process's writes stay in the page cache, so this finds
# nothing: the bug needs a power loss, which takes LazyFS or a virtual
# machine natively. Counts runs where the client exits non-zero (a lost
# acknowledged write, or no answer), or hangs, and prints the client's
# complaint of each such run. FIXED=1 native.sh N runs the fixed server.
set -u
n=${1:-1000}
bin=$(cd "$(dirname "$0")/../../bin/bugs/power-1" && pwd)/power1
fixed=${FIXED:+--fixed}
port=17760
. "$(dirname "$0")/../common/native.sh"
ports_free $port
kill_restart_runs "$n" "$bin" $port "$(mktemp -d /tmp/power1-native.XXXXXX)" 'journal'
