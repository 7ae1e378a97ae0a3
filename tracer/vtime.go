package tracer

import (
	"encoding/binary"
	"log/slog"
	"os"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// vtime owns what the tracer does with virtual time: clock reads (the
// syscalls, the clock page, the patched counter reads), nodes' clock
// faults, sleeps, timed waits and virtual kernel timers, and the one queue
// of their deadlines (deadlineQueue).
type vtime struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable

	vdso    *vdsoEntries // the vDSO's clock entry points, found at the first exec
	timers  *timerTable  // virtual kernel timers (vtime_timers.go), made on first use
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

// deadlineOwner is something waiting for a virtual time: a pending op (a
// sleep, a poll's or a socket's timeout, a connect no one answers), a
// thread in a timed wait, a kernel timer.
type deadlineOwner interface {
	// pendingDeadline is the owner's pending deadline. gone says it has none any
	// more (released, woken, disarmed, exited) until it is queued again;
	// hidden, that it is not to be listed now (a wait being interrupted).
	pendingDeadline(vt *vtime) (d Deadline, gone, hidden bool)
}

// deadlineQueue is the one queue of the tracer's virtual deadlines. Their
// owners queue themselves when they start waiting (numberFresh, takeTimeout,
// arm) and leave it when they stop; the state's deadlines, the timers that
// fire and the timed waits woken when the clock moves are read from it.
type deadlineQueue struct {
	owners []deadlineOwner // in the order they were queued
	queued map[deadlineOwner]bool
}

// add queues o, once.
// addDeadline queues the deadline of a numbered op.
func (vt *vtime) addDeadline(p *pendingOp) { vt.queue.add(p) }

func (q *deadlineQueue) add(o deadlineOwner) {
	if q.queued == nil {
		q.queued = map[deadlineOwner]bool{}
	}
	if !q.queued[o] {
		q.queued[o] = true
		q.owners = append(q.owners, o)
	}
}

// each calls f for every queued owner with a pending deadline, in queue
// order, and drops the owners whose deadline is gone.
func (q *deadlineQueue) each(vt *vtime, f func(o deadlineOwner, d Deadline, hidden bool)) {
	keep := q.owners[:0]
	for _, o := range q.owners {
		d, gone, hidden := o.pendingDeadline(vt)
		if gone {
			delete(q.queued, o)
			continue
		}
		keep = append(keep, o)
		f(o, d, hidden)
	}
	clear(q.owners[len(keep):])
	q.owners = keep
}

// wakeOwner queues an Options.Wakes entry in the tracer's one deadline
// queue. It is never gone: its owner's deadline comes and goes with the
// owner's state, so it is asked again at every read rather than re-queued.
type wakeOwner struct{ wake Wake }

func (w *wakeOwner) pendingDeadline(*vtime) (Deadline, bool, bool) {
	d, ok := w.wake.Next()
	return d, false, !ok
}

func (vt *vtime) now() int64 { return int64(vt.opts.Clock.Now()) }

// Virtual time for the syscalls that wait: sleeps, and futex waits whose
// timeout lockstep owns and ends at its virtual deadline.

// never is a deadline so far away that the clock never jumps to it.
const never = int64(1) << 62

// Kernel timers as virtual deadlines.
//
// A program that arms a kernel timer (timerfd, alarm, setitimer, POSIX
// timer_create) and then blocks in an untimed wait would see the timer expire
// in real time against a clock that has not moved, or never see it expire
// if the virtual clock is the only one that moves. Lockstep therefore keeps
// every such timer's expiry and interval itself, answers the set and get
// calls from that record, and fires the timer when virtual time reaches its
// expiry, at a quiescent point:
//   - timerfd: the tracee's fd stays a real kernel timerfd, but its kernel
//     timer is never armed; lockstep sets its expiration count through its
//     own duplicate (TFD_IOC_SET_TICKS), so read(2), poll, select and epoll
//     readiness are the kernel's own, and the wakeup is synchronous. (Kernels
//     without CONFIG_CHECKPOINT_RESTORE lack the ioctl: the real timer is
//     then armed for 1ns, and a read counts one expiration at a time.)
//   - alarm and ITIMER_REAL: SIGALRM is sent to the process (si_code is
//     SI_USER: another process may not queue SI_KERNEL). ITIMER_VIRTUAL and
//     ITIMER_PROF measure CPU time, which lockstep does not virtualize: the
//     kernel keeps them.
//   - POSIX timers on CLOCK_REALTIME/MONOTONIC/BOOTTIME (and the _ALARM
//     variants): timer_create is answered with an ID of lockstep's own and
//     no kernel timer exists; expiries queue the signal with si_code
//     SI_TIMER and the timer's sigev_value (glibc's SIGEV_THREAD helper
//     needs both), to the process or, for SIGEV_THREAD_ID, to the thread.
//     Timers on other clocks (CPU time) stay in the kernel.
//
// A timer's signal also interrupts a gated wait (see interruptedBySignal).
//
// Limits: a timer belongs to the process that armed it (a forked child that
// inherits a timerfd sees the kernel's disarmed timer); the overrun count of
// a POSIX timer whose signal is still queued goes to timer_getoverrun, not
// into the queued siginfo, which the kernel updates at dequeue time and
// lockstep cannot.

type timerKind uint8

const (
	kindTimerfd timerKind = iota
	kindItimer            // ITIMER_REAL, also set by alarm
	kindPosix
)

// Linux ABI constants golang.org/x/sys/unix does not name.
const (
	tfdTimerAbstime = 1          // TFD_TIMER_ABSTIME and TIMER_ABSTIME
	tfdIocSetTicks  = 0x40085400 // _IOW('T', 0, u64)
	kcmpFile        = 0
	siTimer         = -2 // SI_TIMER
	sigevSignal     = 0
	sigevNone       = 1
	sigevThread     = 2
	sigevThreadID   = 4
	// posixIDBase keeps lockstep's timer IDs apart from the kernel's,
	// which count up from 0 per process (CPU-clock timers stay there).
	posixIDBase = 0x40000000
)

// vtimer is one virtual kernel timer.
type vtimer struct {
	kind    timerKind
	removed bool // out of the table (removeTimer)
	proc    *process
	// lpid is the thread that armed it: the deadline's owner, and the
	// tie-break between timers due at the same instant.
	lpid string
	// alarm says ITIMER_REAL was last set by alarm(2) (the deadline's name).
	alarm    bool
	armed    bool
	expiry   int64 // virtual ns, when armed
	interval int64 // ns, 0 for one-shot
	// clock is the virtual clock absolute settings are readings of.
	clock int32

	// timerfd: the tracee's fd and lockstep's duplicate of it; ticks is
	// the expiration count lockstep last set (the kernel's count while the
	// fd stays readable, since a read takes all of it).
	fd, dup int
	ticks   uint64

	// POSIX timers.
	id      int32
	execs   int // the process's exec count at creation: exec deletes them
	notify  int32
	signo   int32
	tid     int // SIGEV_THREAD_ID target
	value   uint64
	overrun int32 // expirations while the last signal was still queued
}

// timerTable is the tracer's virtual timers, owned by the tracer thread.
type timerTable struct {
	all    []*vtimer
	nextID map[*process]int32
	// signalled holds, per process, the timer signals sent and perhaps
	// not yet taken (bit sig-1).
	signalled map[*process]uint64
}

func readTimespec(pid int, addr uint64) (int64, bool) {
	var b [16]byte
	if ptrace.ReadMem(pid, addr, b[:]) != nil {
		return 0, false
	}
	sec := int64(binary.LittleEndian.Uint64(b[:]))
	nsec := int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return 0, false
	}
	if sec > (1<<62)/1_000_000_000 {
		return 1 << 62, true
	}
	return sec*1e9 + nsec, true
}

func putTimespec(b []byte, ns int64) {
	binary.LittleEndian.PutUint64(b, uint64(ns/1e9))
	binary.LittleEndian.PutUint64(b[8:], uint64(ns%1e9))
}
