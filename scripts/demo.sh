#!/usr/bin/env bash
# The tracer demo: a single-threaded C server receives two messages; lockstep
# holds the first client's message in flight and delivers the second one
# first, so the server observes an order that a plain run almost never shows.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -run 'TestDeliverOutOfOrder|TestPingPongOpsSequence' -v ./tracer/
