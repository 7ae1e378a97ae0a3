package tracer

import (
	"time"

	"golang.org/x/sys/unix"
)

// inFlight paces a wait for a packet lockstep knows to be on its way
// between namespaces: short sleeps first (it usually arrives within
// microseconds), longer ones once it is late, until finWaitLimit of real
// time has passed. A count of polls, the bound before, lasted 20 ms on a
// quiet machine and far longer or shorter on a loaded one.
type inFlight struct {
	start time.Time
	polls int
}

// again sleeps before the next look and reports whether there is one.
func (w *inFlight) again() bool {
	if w.polls == 0 {
		w.start = time.Now()
	}
	w.polls++
	d := 10 * time.Microsecond
	switch {
	case w.polls > 1000:
		d = time.Millisecond
	case w.polls > 100:
		d = 100 * time.Microsecond
	}
	if w.polls > 100 && time.Since(w.start) > finWaitLimit {
		return false
	}
	unix.Nanosleep(&unix.Timespec{Nsec: d.Nanoseconds()}, nil)
	return true
}

// handshaking reports whether a connect's handshake between two nodes is
// still on its way: the connecting socket has sent its SYN and not yet
// retransmitted it (one lost, to a full backlog or a peer gone,
// leaves the rest to the kernel's timers, seconds of real time) and
// finWaitLimit has not passed.
func handshaking(cw *connectWait) bool {
	if time.Since(cw.since) < connectWaitLimit {
		return true
	}
	if cw.fi == nil || cw.fi.dup < 0 || time.Since(cw.since) > finWaitLimit {
		return false
	}
	ti, err := unix.GetsockoptTCPInfo(cw.fi.dup, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return false
	}
	return ti.State == tcpSynSent && ti.Retransmits == 0 && ti.Backoff == 0
}
