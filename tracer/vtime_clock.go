package tracer

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
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
func (vt *vtime) readClock(ni *nodeInfo, id int32) (int64, bool) {
	ns, ok := vt.opts.Clock.Read(id)
	if ok && ni != nil && realtimeClock(id) {
		ns += int64(vt.wallOffset(ni))
	}
	return ns, ok
}

// wallOffset is how far the node's wall clock is from the virtual clock
// now: its skew and jumps, plus what its drift gained since it began.
func (vt *vtime) wallOffset(ni *nodeInfo) time.Duration {
	return ni.clockOffset + ni.driftGain + Drifted(time.Duration(vt.now()-ni.driftFrom), ni.drift)
}

// Drifted is what a clock running ppm parts per million fast (slow when
// negative) gains over d, truncated to the nanosecond.
func Drifted(d time.Duration, ppm int64) time.Duration {
	const m = 1_000_000
	return d/m*time.Duration(ppm) + d%m*time.Duration(ppm)/m
}

// untilWall is the virtual time until a node's clock id reads abs (an
// absolute deadline), given that it reads vnow now: a drifting wall clock
// gets there sooner or later than the virtual clock.
func (vt *vtime) untilWall(ni *nodeInfo, id int32, abs, vnow int64) int64 {
	rel := abs - vnow
	if ni == nil || ni.drift == 0 || !realtimeClock(id) || rel <= 0 {
		return rel
	}
	return int64(float64(rel) / (1 + float64(ni.drift)/1e6))
}

// driftClock makes a node's wall clock run ppm parts per million fast (or
// slow); 0 ends the drift and takes back what it gained, as a clock
// disciplined again would.
//
// Precondition: runs on the tracer thread.
func (vt *vtime) driftClock(node string, ppm int64) {
	ni := vt.pt.nodeNamed(node)
	if ni == nil {
		return
	}
	if ppm == 0 {
		ni.driftGain = 0
	} else {
		ni.driftGain += Drifted(time.Duration(vt.now()-ni.driftFrom), ni.drift)
	}
	ni.drift, ni.driftFrom = ppm, vt.now()
}

// shiftClock moves a node's wall clock by d (a clock fault); its monotonic
// clocks are untouched, as NTP stepping a host's clock would leave them.
//
// Precondition: runs on the tracer thread.
func (vt *vtime) shiftClock(node string, d time.Duration) {
	if ni := vt.pt.nodeNamed(node); ni != nil {
		ni.clockOffset += d
	}
}

// onClockGettime answers clock_gettime from virtual time.
func (vt *vtime) onClockGettime(th *thread, c call) bool {
	ns, ok := vt.readClock(th.proc.node, int32(c.id))
	if !ok {
		return false
	}
	vt.stats.ClockReads++
	if c.out != 0 {
		var b [16]byte
		putTimespec(b[:], ns)
		ptrace.WriteMem(th.tid, c.out, b[:])
	}
	th.fake(0)
	return true
}

// onGettimeofday answers gettimeofday from the virtual wall clock.
func (vt *vtime) onGettimeofday(th *thread, c call) bool {
	vt.stats.ClockReads++
	ns, _ := vt.readClock(th.proc.node, unix.CLOCK_REALTIME)
	if c.out != 0 {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ns/1e9))
		binary.LittleEndian.PutUint64(b[8:], uint64(ns%1e9/1e3))
		ptrace.WriteMem(th.tid, c.out, b[:])
	}
	th.fake(0)
	return true
}

// onTime answers time from the virtual wall clock.
func (vt *vtime) onTime(th *thread, c call) bool {
	vt.stats.ClockReads++
	ns, _ := vt.readClock(th.proc.node, unix.CLOCK_REALTIME)
	if c.out != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ns/1e9))
		ptrace.WriteMem(th.tid, c.out, b[:])
	}
	th.fake(ns / 1e9)
	return true
}
