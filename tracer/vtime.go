package tracer

import (
	"encoding/binary"
	"log/slog"
	"os"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
	"golang.org/x/sys/unix"
)

// vtime owns what the tracer does with virtual time: clock reads (the
// syscalls, the clock page, the patched counter reads), nodes' clock
// faults, sleeps, timed waits and virtual kernel timers, and the one queue
// of their deadlines (deadlines.go).
type vtime struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable

	vdso    *vdsoEntries // the vDSO's clock entry points, found at the first exec
	timers  *timerTable  // virtual kernel timers (timers.go), made on first use
	selfPid int
	// queue holds every virtual deadline of the trial: sleeps and
	// timeouts of pending ops, timed waits, kernel timers, and the owner's
	// wakes (Options.Wakes: node starts, hold ends, fault deadlines).
	queue deadlineQueue
}

func newVtime(opts *Options, log *slog.Logger, stats *Stats, pt *procTable, ops *opTable) *vtime {
	vt := &vtime{opts: opts, log: log, stats: stats, pt: pt, ops: ops, selfPid: os.Getpid()}
	for _, w := range opts.Wakes {
		vt.queue.add(&wakeOwner{wake: w})
	}
	return vt
}

// emulateTSC answers a faulting rdtsc or rdtscp (PR_TSC_SIGSEGV) from
// virtual time. It reports false for any other SIGSEGV.
func (vt *vtime) emulateTSC(th *thread) bool {
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	var code [3]byte
	if ptrace.ReadMem(th.tid, th.regs.PC(), code[:]) != nil {
		return false
	}
	if !th.regs.EmulateTSC(code, tscBase+uint64(vt.opts.Clock.Now())) {
		return false
	}
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	vt.stats.TSCReads++
	th.cont(0)
	return true
}

// sockTimeout gives a blocking recv or accept the virtual deadline of its
// socket's SO_RCVTIMEO (options belong to the socket, not the descriptor).
func (vt *vtime) sockTimeout(po *pendingOp) {
	if po.immediate || vt.opts.Clock == nil || po.fi == nil || po.fi.dup < 0 {
		return
	}
	if d := vt.pt.sockOptsOf(po.fi).rcvTimeo; d > 0 {
		po.deadline = vt.now() + d
	}
}

// takeMmsgTimeout notes when the timeout of a recvmmsg (its fifth
// argument) ends on the virtual clock. The kernel checks that timeout only
// after each datagram it receives, so it does not bound the wait for the
// first one (the op's), only how many datagrams the call takes once
// released (releaseMmsgTimeout).
func (vt *vtime) takeMmsgTimeout(po *pendingOp) {
	if po.nr != unix.SYS_RECVMMSG || po.args[4] == 0 || vt.opts.Clock == nil {
		return
	}
	ns, ok := readTimespec(po.th.tid, po.args[4])
	if !ok {
		return // the kernel answers EFAULT or EINVAL at once
	}
	vt.stats.TimedWaits++
	po.mmsgEnd, po.mmsgTimed = vt.now()+ns, true
}

// releaseMmsgTimeout hands a recvmmsg released with datagrams to read the
// virtual time its timeout has left, as the kernel would have found it
// after the first datagram. Run out: the timespec is zeroed, and the
// kernel returns after one datagram and writes zero back. Time left: the
// call runs without a timeout (it takes no real time to read what is
// queued) and the timespec holds what is left, as the kernel writes it
// back on success.
func (vt *vtime) releaseMmsgTimeout(p *pendingOp) {
	if !p.mmsgTimed {
		return
	}
	th := p.th
	left := max(p.mmsgEnd-vt.now(), 0)
	var b [16]byte
	putTimespec(b[:], left)
	if ptrace.WriteMem(th.tid, p.args[4], b[:]) != nil || left == 0 {
		return
	}
	th.regs.SetArg(4, 0)
	ptrace.SetRegs(th.tid, &th.regs)
}

// onClockGettime answers clock_gettime from virtual time.
func (vt *vtime) onClockGettime(th *thread, _ int, a [6]uint64) bool {
	ns, ok := vt.readClock(th.proc.node, int32(a[0]))
	if !ok {
		return false
	}
	vt.stats.ClockReads++
	if a[1] != 0 {
		var b [16]byte
		putTimespec(b[:], ns)
		ptrace.WriteMem(th.tid, a[1], b[:])
	}
	th.fake(0)
	return true
}

// onGettimeofday answers gettimeofday from the virtual wall clock.
func (vt *vtime) onGettimeofday(th *thread, _ int, a [6]uint64) bool {
	vt.stats.ClockReads++
	ns, _ := vt.readClock(th.proc.node, unix.CLOCK_REALTIME)
	if a[0] != 0 {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ns/1e9))
		binary.LittleEndian.PutUint64(b[8:], uint64(ns%1e9/1e3))
		ptrace.WriteMem(th.tid, a[0], b[:])
	}
	th.fake(0)
	return true
}

// onTime answers time from the virtual wall clock.
func (vt *vtime) onTime(th *thread, _ int, a [6]uint64) bool {
	vt.stats.ClockReads++
	ns, _ := vt.readClock(th.proc.node, unix.CLOCK_REALTIME)
	if a[0] != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ns/1e9))
		ptrace.WriteMem(th.tid, a[0], b[:])
	}
	th.fake(ns / 1e9)
	return true
}

// onFutex takes over a timed futex wait's timeout (the filter stops only
// waits that carry one).
func (vt *vtime) onFutex(th *thread, _ int, a [6]uint64) bool {
	return vt.onFutexWait(th, a)
}
