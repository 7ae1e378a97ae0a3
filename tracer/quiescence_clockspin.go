package tracer

// Threads that wait for the clock to move. A runtime whose thread waits
// for another often spins, reading the clock, and sleeps only once some
// time has passed: HotSpot's handshakes do. Under lockstep
// the clock stands still while threads settle, so such a loop never
// sleeps; when what it waits for is a thread lockstep holds until nothing
// else runs (a clone or a disk call: onCreate, onAlone), each waits for
// the other until the grace period is over, seconds each time (a JVM that
// started a thread during a handshake took 2.4 s of CPU to start).
//
// clockSpinners tells such a loop from work without stopping the thread:
// a hardware breakpoint on the clock page's clock_gettime entry, counted by
// the kernel (perf_event_open, no signal, no stop), says how often each
// thread still running read the clock while it was watched. Held threads
// then run beside the loop, as they would after the grace period; the
// loop is not reported as spinning (that stays the grace period's
// verdict), so a system whose loop never ends is judged as before.
//
// Under Serialize the loop shares the tracer's round-robin queue, where
// it holds the CPU for a whole slice (100 ms) whenever the tracer waits
// behind it. While it is watched the tracer runs one priority above the
// tracees, so that it takes the CPU back as soon as it wakes; the tracees
// keep their order among themselves (a thread preempted by a higher
// priority stays first in its queue). A thread judged to loop runs under
// the default policy until its next stop, below every serialized thread:
// the held call and whatever it wakes run first, and the loop runs when
// nothing else can, which is all it can use the CPU for.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// clockSpinAfter is how long threads must run without progress before
	// they are watched: most reach their next gated syscall within
	// microseconds.
	clockSpinAfter = 10 * time.Millisecond
	// clockSpinWindow is how long they are watched.
	clockSpinWindow = 5 * time.Millisecond
	// clockSpinReads is how many reads of the clock within the window, and
	// clockSpinEvery how much CPU time at most per read, make a loop
	// waiting for it: HotSpot's read it every 3 us (1,800 times in 5 ms,
	// with the breakpoint's cost), work that times itself now and then.
	clockSpinReads = 100
	clockSpinEvery = 50 * time.Microsecond
)

// schedOther is the default policy (linux/sched.h SCHED_NORMAL).
const schedOther = 0

// From linux/hw_breakpoint.h: an execute breakpoint spans a long.
const (
	hwBreakpointX   = 4
	hwBreakpointLen = 8
)

// clockWatch is one look at the threads still running while others wait
// to run alone.
type clockWatch struct {
	at time.Time
	// threads are the running threads at the look, by tid: the counter of
	// their clock reads (fd, -1 for a thread found asleep) and their CPU
	// time then.
	threads map[int]watched
	// done: the look was judged (or could not be taken); the grace period
	// decides from here.
	done bool
}

type watched struct {
	fd  int
	cpu uint64
}

// close releases the counters; a nil watch has none.
func (w *clockWatch) close() {
	if w == nil {
		return
	}
	for tid, t := range w.threads {
		if t.fd >= 0 {
			unix.Close(t.fd)
		}
		delete(w.threads, tid)
	}
}

// clockSpinners reports whether every thread still running, while some
// thread waits to run alone, is asleep or loops reading a clock that cannot
// move: then nothing will change until a held thread runs.
func (q *quiescence) clockSpinners(w *settling) bool {
	if q.pt.nState[tsAlone] == 0 || q.clockWatchOff || time.Since(w.lastProgress) < clockSpinAfter {
		return false
	}
	switch {
	case w.clock == nil:
		w.clock = q.watchClockReads()
		return false
	case w.clock.done || time.Since(w.clock.at) < clockSpinWindow:
		return false
	}
	spinners, tids, decided := q.judgeClockReads(w.clock)
	if !decided {
		return false
	}
	q.tracerAbove(false)
	w.clock.close()
	w.clock.done = true
	if len(spinners) == 0 {
		return false
	}
	looping := make([]string, 0, len(tids))
	for _, tid := range tids {
		looping = append(looping, q.pt.threadOf(tid).lpid)
		q.demote(tid)
	}
	q.stats.ClockSpins++
	q.rt.note("clock loop: %s read the stopped clock while %s waited to run alone", sortedList(looping), q.pt.heldAlone())
	q.log.Debug("threads wait for the clock while others wait to run alone", slog.Any("threads", spinners))
	return true
}

// watchClockReads starts a look at the running threads: a counter of clock
// reads on each that is runnable, the CPU time of all. A look that cannot
// be taken (a thread starting, a process without the clock page, counters
// refused) is done at once.
func (q *quiescence) watchClockReads() *clockWatch {
	w := &clockWatch{at: time.Now(), threads: map[int]watched{}}
	for th := range q.pt.allThreads() {
		if th.state != tsRunning && th.state != tsTimedWait && th.state != tsNew {
			continue
		}
		s, c, ok := th.kernelState()
		if !ok || th.state == tsNew || th.proc == nil {
			w.done = true
			break
		}
		fd := -1
		if s == 'R' {
			// Above the tracees first: opening the counter may sleep, and
			// a loop would then hold the CPU for a whole slice.
			q.tracerAbove(true)
			var err error
			if fd, err = countClockReads(th.tid, q.opts.CPU, th.proc.clockEntry); err != nil {
				if !errors.Is(err, errNoClockEntry) {
					// Refused here (perf_event_paranoid, a hypervisor
					// without debug registers): the grace period decides
					// for the rest of the trial.
					q.clockWatchOff = true
					q.log.Debug("clock reads cannot be counted", slog.Any("err", err))
				}
				w.done = true
				break
			}
		}
		w.threads[th.tid] = watched{fd: fd, cpu: c}
	}
	if w.done {
		q.tracerAbove(false)
		w.close()
		return w
	}
	// The look starts once the counters are open: opening one may sleep
	// (some 100 ms the first time after a pause), and the CPU a thread
	// got meanwhile says nothing.
	w.at = time.Now()
	for tid, t := range w.threads {
		if _, c, ok := q.pt.threads[tid].kernelState(); ok {
			t.cpu = c
			w.threads[tid] = t
		}
	}
	return w
}

// judgeClockReads names the threads that looped on the clock through the
// look (with their tids), or none unless every other thread running at its
// start slept through it without using the CPU, and no thread started
// since. It is not decided while a runnable thread got too little CPU to
// tell (a loaded machine): the look goes on.
func (q *quiescence) judgeClockReads(w *clockWatch) ([]string, []int, bool) {
	var spinners []string
	var tids []int
	running := 0
	for th := range q.pt.allThreads() {
		if th.state != tsRunning && th.state != tsTimedWait && th.state != tsNew {
			continue
		}
		running++
		t, seen := w.threads[th.tid]
		s, c, ok := th.kernelState()
		if !seen || !ok || c < t.cpu {
			return nil, nil, true
		}
		if t.fd < 0 {
			if (s != 'S' && s != 'I') || c != t.cpu {
				return nil, nil, true
			}
			continue
		}
		var buf [8]byte
		if n, err := unix.Read(t.fd, buf[:]); err != nil || n != len(buf) {
			return nil, nil, true
		}
		reads := binary.LittleEndian.Uint64(buf[:])
		switch {
		case s != 'R':
			return nil, nil, true
		case reads < clockSpinReads && c-t.cpu < uint64(clockSpinWindow):
			return nil, nil, false
		case reads < clockSpinReads || c-t.cpu > reads*uint64(clockSpinEvery):
			// A loop reads the clock all along, however much CPU a
			// loaded machine left it.
			return nil, nil, true
		}
		spinners = append(spinners, fmt.Sprintf("%s (%d reads in %v)", th.lpid, reads, time.Since(w.at).Round(time.Millisecond)))
		tids = append(tids, th.tid)
	}
	if running != len(w.threads) {
		return nil, nil, true
	}
	return spinners, tids, true
}

// errNoClockEntry: the process reads the clock elsewhere than through the
// page (no vDSO, or virtual time off), so its reads cannot be counted.
var errNoClockEntry = errors.New("no clock page entry")

// countClockReads opens a counter of tid's executions of the instruction
// at entry, counted by the kernel from a hardware breakpoint. A counter
// bound to the CPU the tracees are pinned to (cpu >= 0) takes a shared
// lock; one for any CPU the kernel's exclusive one, which waited for a
// grace period of RCU: 100 ms while a JVM's thread looped on the CPU.
func countClockReads(tid, cpu int, entry uint64) (int, error) {
	if entry == 0 {
		return -1, errNoClockEntry
	}
	attr := unix.PerfEventAttr{
		Type:    unix.PERF_TYPE_BREAKPOINT,
		Size:    uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bp_type: hwBreakpointX,
		Ext1:    entry,
		Ext2:    hwBreakpointLen,
		Bits:    unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	if cpu < 0 {
		cpu = -1
	}
	return unix.PerfEventOpen(&attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// demote moves a thread judged to loop below the serialized threads (see
// clockSpinners) until its next stop (restore).
func (q *quiescence) demote(tid int) {
	if !q.opts.Serialize || q.demoted[tid] {
		return
	}
	if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: schedOther}, 0); err != nil {
		return
	}
	if q.demoted == nil {
		q.demoted = map[int]bool{}
	}
	q.demoted[tid] = true
}

// restore gives a demoted thread its place in the serialized queue back.
func (q *quiescence) restore(tid int) {
	if !q.demoted[tid] {
		return
	}
	delete(q.demoted, tid)
	// A thread gone takes its policy with it.
	_ = unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 1}, 0)
}

// endWatch ends the settling's look.
func (q *quiescence) endWatch(w *settling) {
	if w.clock == nil {
		return
	}
	if !w.clock.done {
		q.tracerAbove(false)
	}
	w.clock.close()
	w.clock = nil
}

// tracerAbove puts the tracer thread one priority above the serialized
// tracees (up) or back among them.
func (q *quiescence) tracerAbove(up bool) {
	if !q.opts.Serialize || q.above == up {
		return
	}
	prio := uint32(1)
	if up {
		prio = 2
	}
	if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: prio}, 0) == nil {
		q.above = up
	}
}
