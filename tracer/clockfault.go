package tracer

import (
	"time"

	"golang.org/x/sys/unix"
)

// realtimeClock says whether a clock id reads the wall clock, which a clock
// fault moves; monotonic and boot-time clocks stay sane.
func realtimeClock(id int32) bool {
	switch id {
	case unix.CLOCK_REALTIME, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_REALTIME_ALARM, unix.CLOCK_TAI:
		return true
	}
	return false
}

// readClock answers a node's clock read: the virtual clock, plus the node's
// wall-clock offset for realtime clocks.
func (t *Tracer) readClock(ni *nodeInfo, id int32) (int64, bool) {
	ns, ok := t.opts.Clock.Read(id)
	if ok && ni != nil && realtimeClock(id) {
		ns += int64(ni.clockOffset)
	}
	return ns, ok
}

// shiftClock moves a node's wall clock by d (a clock fault); its monotonic
// clocks are untouched, as NTP stepping a host's clock would leave them.
//
// Precondition: runs on the tracer thread.
func (t *Tracer) shiftClock(node string, d time.Duration) {
	if ni := t.nodes[node]; ni != nil {
		ni.clockOffset += d
	}
}
