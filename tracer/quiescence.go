package tracer

import (
	"log/slog"
	"os"
	"time"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// quiescence owns waiting until no traced thread can make progress without
// lockstep: collecting the tracees' events (which it hands to handle),
// telling asleep from runnable threads, the sentinel that wakes a blocking
// wait, and the disk syscalls held until nothing else runs.
type quiescence struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	rt    *realTime
	pt    *procTable
	ops   *opTable
	net   *network
	// handle dispatches one event of a tracee (Tracer.handle).
	handle func(tid int, st ptrace.Status)

	spinning []string
	// sentinel is a paused child of the tracer thread; stopping it wakes a
	// blocking wait4 when no tracee will report (see blockingWait).
	sentinel     int
	sentinelPipe *os.File // the sentinel's stdin, never written
	alarm        *alarm   // stops the sentinel when a blocking wait ends
	// switches is the tracer thread's involuntary context switches at its
	// last yield (see nothingRan).
	switches int64
	// clockWatchOff: counting clock reads was refused (clockSpinners);
	// the grace period alone judges running threads.
	clockWatchOff bool
	// demoted are the threads taken out of the serialized queue while
	// they loop on the clock (clockSpinners), back at their next stop.
	demoted map[int]bool
	// above: the tracer thread runs above the tracees while it watches
	// threads that may loop (tracerAbove).
	above bool
}

// drain handles every event already waiting. With block false and nothing
// waiting it returns 0 at once.
func (q *quiescence) drain(nohang bool) int {
	n := 0
	flags := ptrace.Tracees
	if nohang {
		flags |= ptrace.NoHang
	}
	for {
		tid, st, err := ptrace.Wait(-1, flags)
		if err != nil || tid <= 0 {
			return n
		}
		n++
		q.handleTimed(tid, st)
		flags |= ptrace.NoHang
	}
}

// handleTimed is handle, timed for Stats.HandleTime; an event other than a
// syscall stop makes the next collect ask the kernel again.
func (q *quiescence) handleTimed(tid int, st ptrace.Status) {
	t0 := time.Now()
	if st.Kind() != ptrace.SeccompStop {
		// An exit, a clone, an exec or a signal may have others behind it.
		q.pt.expectEvent()
		// And may close sockets (an exit, an exec), or run a handler.
		q.net.invalidate()
	}
	if len(q.demoted) > 0 {
		q.restore(tid)
	}
	q.handle(tid, st)
	q.stats.HandleTime += time.Since(t0)
}

// collect handles the events waiting, like drain(true), but asks the
// kernel only while one may be there (see quiet): most ops end with every
// thread stopped by lockstep, and the wait4 that would confirm nothing
// came is a syscall per op.
func (q *quiescence) collect() int {
	n := 0
	for !q.quiet() {
		tid, st, err := ptrace.Wait(-1, ptrace.Tracees|ptrace.NoHang)
		if err != nil || tid <= 0 {
			q.pt.noEventWaiting()
			return n
		}
		n++
		q.handleTimed(tid, st)
	}
	return n
}

// quiet reports whether no tracee can have an event to report: every live
// thread is stopped by lockstep at a syscall, and since the last wait that
// found nothing lockstep neither signalled a tracee nor handled an event
// other than a syscall stop. Such threads report only when resumed or
// killed; a SIGKILL one tracee sends another while every thread is held is
// seen at the next wait, which the release of any op that resumes a
// thread brings.
func (q *quiescence) quiet() bool { return !q.pt.eventExpected() && q.pt.nHeld() == q.pt.threadCount() }
