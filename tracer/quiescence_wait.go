package tracer

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// onAlone holds a syscall that may sleep on the disk (fsync, fallocate,
// rename...) until every other thread is quiescent. Run at once, it would
// leave the CPU to the threads it woke for as long as the disk took, and
// how far they got before it returned depended on the disk, not on the
// schedule: a Go member of etcd woke a thread, went into fallocate, and that
// thread ran first in some runs and second in others. Held, it runs after
// them, alone; it is not an op, and the schedule does not see it.
func (q *quiescence) onAlone(th *thread, _ call) bool {
	q.stats.Alone++
	q.pt.setState(th, tsAlone)
	return true
}

// onCreate holds a clone, fork or vfork until every other thread is
// quiescent, and runs those held in LPID order (nextAlone): one at a time,
// in an order set by the names the cloning threads already have, so that
// the kernel's tids and the new threads' first runs follow the schedule. A
// new thread's name is its creator's and the creator's count
// (childLPID), which no order of two creators moves.
func (q *quiescence) onCreate(th *thread, _ call) bool {
	q.stats.Clones++
	q.pt.setState(th, tsAlone)
	return true
}

// onDiskSync answers a request to write a file's data to the disk at once.
// A crash fault kills a node's processes, not the machine: the page cache,
// and every byte written into it, survives as on a host whose process died,
// so the flush changes nothing a schedule can observe, while it costs the
// disk's real time, during which no other thread may run (onAlone): etcd's
// trials took half as long again when every fdatasync ran alone. A call on
// something that is not a file runs as it is, alone, for its errors.
func (q *quiescence) onDiskSync(th *thread, c call) bool {
	if c.nr == unix.SYS_SYNC || isFile(th.proc.pid, c.fd) {
		q.stats.DiskSyncs++
		th.fake(0)
		return true
	}
	return q.onAlone(th, c)
}

// isFile reports whether the process's descriptor fd names a file or a
// directory (not a pipe, a socket or nothing).
func isFile(pid, fd int) bool {
	if fd < 0 {
		return false
	}
	target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
	return err == nil && strings.HasPrefix(target, "/")
}

// maxStarvedRounds bounds the extra grace periods waited for runnable
// threads that got no CPU (a loaded machine) before quiescence is declared
// without calling them spinning.
const maxStarvedRounds = 4

// waitQuiescent returns when no thread can make progress without lockstep.
// Each round collects the events that came; without one it checks whether
// everything sleeps, judges the threads still running once the grace
// period is over, or else waits a little (settleWait).
func (q *quiescence) waitQuiescent(ctx context.Context) error {
	w := settling{lastProgress: time.Now()}
	defer q.endWatch(&w)
	q.yieldToResumed()
	for ; ; w.spins++ {
		if n := q.collect(); n > 0 {
			q.endWatch(&w)
			w.moved()
			w.kernelSince, w.dueSince = time.Time{}, time.Time{}
			continue
		}
		if q.pt.running() == 0 && q.net.netSettled() {
			return nil
		}
		if w.spins >= 16 && q.confirmAsleep(&w) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if q.clockSpinners(&w) {
			return nil
		}
		if time.Since(w.lastProgress) > q.opts.Grace {
			if done, err := q.graceOver(&w); done {
				return err
			}
			continue
		}
		q.settleWait(&w)
	}
}

// settling is what waitQuiescent keeps from one round to the next.
type settling struct {
	// spins counts the rounds since the last progress.
	spins        int
	lastProgress time.Time
	// confirmed: every running thread was found asleep in the kernel at
	// the last check, having used cpu's CPU time (see sleepCheck).
	confirmed bool
	cpu       map[int]uint64
	// runnableCPU is the CPU time (ns) of threads found runnable when the
	// grace period ran out, and starvedRounds how many more periods
	// starved ones have been watched.
	runnableCPU   map[int]uint64
	starvedRounds int
	// kernelSince is when threads were first found in uninterruptible
	// sleep past the grace period (zero: none since the last progress).
	kernelSince time.Time
	// dueSince is when threads were first found due to move (runnable
	// without CPU, or with an exit or stop not yet reported) past the
	// grace period.
	dueSince time.Time
	// clock is the look at threads that may loop on the clock while
	// others wait to run alone (clockSpinners); nil until taken.
	clock *clockWatch
}

// moved notes that a thread made progress: the grace period starts
// again, and what was seen of sleeping and runnable threads is stale.
func (w *settling) moved() {
	w.lastProgress = time.Now()
	w.confirmed = false
	w.spins = 0
	w.runnableCPU, w.starvedRounds = nil, 0
}

// yieldToResumed lets the threads just resumed run first when they share
// the tracer's CPU: they have not run, and wait behind the tracer in its
// CPU's round-robin queue. Asking the kernel for their stops before would
// find none.
func (q *quiescence) yieldToResumed() {
	if q.pt.takeResumed() && q.opts.Serialize && q.opts.CPU >= 0 {
		t0 := time.Now()
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		q.stats.SettleYield += time.Since(t0)
	}
}

// confirmAsleep reports whether every running thread was asleep in the
// kernel twice in a row with no CPU time used in between: nobody can
// wake them but lockstep.
func (q *quiescence) confirmAsleep(w *settling) bool {
	asleep, now := q.sleepCheck()
	if !asleep {
		w.confirmed = false
		return false
	}
	if w.confirmed && sameCPU(w.cpu, now) && q.net.netSettled() {
		return true
	}
	w.confirmed, w.cpu = true, now
	return false
}

// graceOver judges the threads lockstep let run once the grace period
// passed with no progress. It reports whether waiting is over, quiescent
// or with an error; otherwise it gave them more time.
func (q *quiescence) graceOver(w *settling) (bool, error) {
	// A thread in uninterruptible sleep (a fork copying its parent, disk
	// I/O) neither spins nor starves: the kernel will let it go on.
	// Waiting for it keeps the schedule from depending on how long the
	// kernel took; past kernelWaitLimit lockstep cannot tell what it
	// waits for, and says so.
	if slow := q.inKernelSleep(); len(slow) > 0 {
		if w.kernelSince.IsZero() {
			w.kernelSince = time.Now()
		}
		if time.Since(w.kernelSince) < kernelWaitLimit {
			w.lastProgress = time.Now()
			return false, nil
		}
		return true, fmt.Errorf("%s: still in uninterruptible sleep after %v", strings.Join(slow, "; "), kernelWaitLimit)
	}
	busy, due := q.runningPastGrace(w.runnableCPU)
	if len(due) > 0 {
		if w.dueSince.IsZero() {
			w.dueSince = time.Now()
		}
		if time.Since(w.dueSince) < kernelWaitLimit {
			if w.runnableCPU != nil {
				w.runnableCPU = busy
			}
			w.lastProgress = time.Now()
			return false, nil
		}
		sort.Strings(due)
		return true, fmt.Errorf("%s: neither ran nor reported an event in %v", strings.Join(due, "; "), kernelWaitLimit)
	}
	w.dueSince = time.Time{}
	return q.judgeRunnable(w, busy), nil
}

// runningPastGrace sorts the threads lockstep let run by what they do
// once the grace period is over (pastGrace): busy holds the runnable
// ones' CPU time, due names those that will move on their own, each with
// why. watched is the CPU time of those found runnable at the last look.
//
// A thread still runnable after the grace period spins only if it got
// the CPU and used it: on a loaded machine a runnable thread may simply
// not have been scheduled. A thread that got no CPU at all, or whose exit
// or stop the kernel has yet to report, is waited for: it will move, and
// a state taken before it did would depend on the machine's load (another
// campaign's real-time threads on this CPU starved an exiting node past
// the grace period).
func (q *quiescence) runningPastGrace(watched map[int]uint64) (map[int]uint64, []string) {
	busy := map[int]uint64{}
	var due []string
	for th := range q.pt.allThreads() {
		if th.state != tsRunning {
			continue
		}
		s, c, ok := th.kernelState()
		before, seen := watched[th.tid]
		switch pastGrace(s, ok, s == 'Z' && th.leaderWaiting(), seen && c == before) {
		case graceDue:
			due = append(due, th.String()+" (its exit or stop unreported)")
		case graceStarved:
			busy[th.tid] = c
			due = append(due, th.String()+" (runnable, no CPU)")
		case graceBusy:
			busy[th.tid] = c
		}
	}
	return busy, due
}

// judgeRunnable decides about the threads runnable past the grace period
// (busy, with their CPU time): it notes their CPU time and watches them
// for more grace periods, then flags those that burned a quarter of one
// as spinning, and gives up on those that ran too little to tell. It
// reports whether waiting is over.
func (q *quiescence) judgeRunnable(w *settling, busy map[int]uint64) bool {
	if len(busy) > 0 && w.runnableCPU == nil {
		w.runnableCPU, w.lastProgress = busy, time.Now()
		return false
	}
	for tid, c := range busy {
		if c-w.runnableCPU[tid] >= uint64(q.opts.Grace/4) {
			q.spinning = append(q.spinning, q.pt.threadOf(tid).lpid)
		}
	}
	if len(q.spinning) == 0 && len(busy) > 0 && w.starvedRounds < maxStarvedRounds {
		w.starvedRounds++
		w.runnableCPU, w.lastProgress = busy, time.Now()
		return false
	}
	if len(q.spinning) == 0 && len(busy) > 0 {
		q.stats.Starved++
	}
	sort.Strings(q.spinning)
	q.noteGrace(busy)
	return true
}

// noteGrace notes a state the grace period ended with threads still
// running (busy): spinning ones, or ones a loaded machine starved.
func (q *quiescence) noteGrace(busy map[int]uint64) {
	if len(busy) == 0 && len(q.spinning) == 0 {
		return
	}
	names := make([]string, 0, len(busy))
	for tid := range busy {
		names = append(names, q.pt.threadOf(tid).lpid)
	}
	q.rt.note("grace period over: %s still running, %s waiting to run alone", sortedList(names), q.pt.heldAlone())
}

// settleWait lets the threads run before the next round: a yield while
// they are likely to reach their next gated syscall soon, a short pause
// once everything was found asleep, else a blocking wait for an event
// that grows with the rounds.
func (q *quiescence) settleWait(w *settling) {
	q.stats.SettleSpins++
	t0 := time.Now()
	switch {
	case w.clock != nil && !w.clock.done:
		// The tracer runs above the threads watched (clockSpinners): a
		// yield would not let them run, a pause does.
		pause(clockSpinWindow / 5)
		q.stats.SettleConfirm += time.Since(t0)
	case w.spins < 16:
		// Most released threads reach their next gated syscall within
		// microseconds: yielding catches them without a timer.
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		q.stats.SettleYield += time.Since(t0)
		if q.nothingRan() {
			// Nothing else could run on this CPU: the threads lockstep
			// let run sleep (or run elsewhere); look at them now rather
			// than yield fifteen more times.
			w.spins = 15
		}
	case w.confirmed:
		pause(20 * time.Microsecond)
		q.stats.SettleConfirm += time.Since(t0)
	default:
		wd := time.Duration(1<<min(w.spins/16, 5)) * 100 * time.Microsecond
		woke := q.blockingWait(wd)
		q.stats.SettleBlocked += time.Since(t0)
		if woke {
			q.endWatch(w)
			w.moved()
		}
	}
}

// sleepCheck reports whether every thread lockstep let run sleeps in the
// kernel, and the CPU time used so far: one count per node with a cgroup
// (keyed -1-idx), one per thread for the others. Threads of a node that
// has not run since they were last seen asleep are not read again
// (proc_node.go).
func (q *quiescence) sleepCheck() (bool, map[int]uint64) {
	for _, ni := range q.pt.nodesInOrder() {
		ni.readCPU()
	}
	now := make(map[int]uint64, len(q.pt.nodesInOrder()))
	for th := range q.pt.allThreads() {
		if th.state != tsRunning && th.state != tsTimedWait && th.state != tsNew {
			continue
		}
		if th.state == tsTimedWait && th.interrupted {
			return false, nil
		}
		if th.connecting != nil && handshaking(th.connecting) {
			// A blocking connect sleeps while its handshake is in
			// flight; it wakes without lockstep.
			return false, nil
		}
		var ni *nodeInfo
		if th.proc != nil {
			ni = th.proc.node
		}
		if ni.asleepSince() || th.asleepSince() {
			q.stats.SleepersSkipped++
			continue
		}
		// The node's count stands for its threads' CPU times.
		perThread := ni == nil || !ni.cpu.ok
		at := th.countNow()
		s, c, ok := th.readState(perThread)
		if !ok {
			continue // gone; its exit event is on its way
		}
		if s == 'D' && !th.inVforkWait() {
			// Uninterruptible sleep is transient (I/O, exec reading
			// the binary) except for a vfork parent waiting for its
			// child, which only lockstep can let go.
			return false, nil
		}
		if s != 'S' && s != 'D' && s != 'Z' && s != 'I' {
			return false, nil
		}
		if s == 'Z' && !th.leaderWaiting() {
			// On its way out: its exit status is coming, and the
			// state before it and the one after are not the same.
			return false, nil
		}
		if perThread {
			now[th.tid] = c
		}
		if s == 'S' || s == 'I' {
			th.sawAsleep(at)
		}
	}
	for _, ni := range q.pt.nodesInOrder() {
		if ni.cpu.ok {
			now[-1-ni.idx] = ni.cpu.usage
			ni.cpu.asleepAt, ni.cpu.asleepOK = ni.cpu.usage, true
		}
	}
	return true, now
}

// nothingRan reports whether the tracer thread's last yield gave the CPU to
// no one: its count of involuntary switches (a yield that lets another
// thread run is one) did not move since the previous call. Only when every
// tracee is pinned to the tracer's CPU in the same round-robin queue
// (Serialize) does that mean no tracee was runnable; otherwise it reports
// false.
func (q *quiescence) nothingRan() bool {
	if !q.opts.Serialize || q.opts.CPU < 0 {
		return false
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return false
	}
	same := ru.Nivcsw == q.switches
	q.switches = ru.Nivcsw
	return same
}

// graceVerdict is what a thread lockstep let run is found doing when the
// grace period runs out.
type graceVerdict uint8

const (
	graceAsleep  graceVerdict = iota // asleep, or a leader waiting for its threads
	graceBusy                        // runnable: spinning, or starved for a while
	graceStarved                     // runnable and given no CPU since last looked at
	graceDue                         // an exit or a stop the kernel has yet to report
)

// pastGrace classifies a thread by its kernel state s (ok: it could be
// read; leaderWaits: a zombie leader waiting for its other threads;
// noCPU: runnable at the last look too, and given no CPU since).
func pastGrace(s byte, ok, leaderWaits, noCPU bool) graceVerdict {
	switch {
	case !ok, s == 't', s == 'X', s == 'Z' && !leaderWaits:
		return graceDue
	case s == 'R' && noCPU:
		return graceStarved
	case s == 'R':
		return graceBusy
	}
	return graceAsleep
}

// kernelWaitLimit bounds the real time quiescence waits for threads in
// uninterruptible sleep. A fork on a loaded machine was seen to take
// seconds; a minute means something else holds them.
const kernelWaitLimit = time.Minute

// inKernelSleep names the threads lockstep let run that are in
// uninterruptible sleep other than a vfork parent's wait for its child,
// each with its syscall.
func (q *quiescence) inKernelSleep() []string {
	var out []string
	for th := range q.pt.allThreads() {
		if th.state != tsRunning && th.state != tsNew && th.state != tsTimedWait {
			continue
		}
		if s, _, ok := th.kernelState(); !ok || s != 'D' || th.inVforkWait() {
			continue
		}
		what := th.String()
		if name := q.sleepingIn(th); name != "" {
			what += " in " + name
		}
		out = append(out, what)
	}
	sort.Strings(out)
	return out
}

// sleepingIn names the syscall th is in, from /proc; "" when it runs in
// user space or is gone.
func (q *quiescence) sleepingIn(th *thread) string {
	sc, err := readSmall("/proc/" + strconv.Itoa(th.tid) + "/syscall")
	if err != nil {
		return ""
	}
	f := strings.Fields(sc)
	if len(f) == 0 {
		return ""
	}
	nr, err := strconv.Atoi(f[0]) // not a number: "running"
	if err != nil {
		return ""
	}
	return syscallName(nr)
}

// leaderWaiting reports whether th, a zombie, is a thread group's leader
// that waits for threads of its group still alive: it stays a zombie, and
// no exit status comes, until they end.
func (th *thread) leaderWaiting() bool {
	p := th.proc
	if p == nil || th.tid != p.pid {
		return false
	}
	for _, o := range p.threads {
		if o == th {
			continue
		}
		if s, _, ok := o.kernelState(); ok && s != 'Z' && s != 'X' {
			return true
		}
	}
	return false
}

func sameCPU(a, b map[int]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func (q *quiescence) startSentinel() {
	pid, keep, err := launch.ForkSentinel()
	if err != nil {
		q.log.Warn("starting the sentinel process; falling back to polling", "err", err)
		return
	}
	q.sentinel, q.sentinelPipe = pid, keep
	if q.alarm, err = newAlarm(pid); err != nil {
		q.log.Warn("starting the sentinel's alarm; falling back to Go timers", "err", err)
	}
}

func (q *quiescence) stopSentinel() {
	if q.alarm != nil {
		q.alarm.close()
		q.alarm = nil
	}
	if q.sentinel > 0 {
		unix.Kill(q.sentinel, unix.SIGKILL)
		ptrace.Wait(q.sentinel, 0)
		q.sentinel = 0
	}
	if q.sentinelPipe != nil {
		q.sentinelPipe.Close()
		q.sentinelPipe = nil
	}
}

// blockingWait waits for one event for at most about d. A blocking wait4
// costs nothing while tracees run, unlike polling, which competes with them
// for the CPU; the sentinel's stop bounds it when every running thread went
// to sleep in the kernel and nothing will report. It reports whether a
// tracee event was handled.
func (q *quiescence) blockingWait(d time.Duration) bool {
	if q.sentinel <= 0 {
		pause(d)
		return q.drain(true) > 0
	}
	sentinel := q.sentinel
	if q.alarm != nil {
		q.alarm.arm(d)
		defer q.alarm.disarm()
	} else {
		timer := time.AfterFunc(d, func() { unix.Kill(sentinel, unix.SIGSTOP) })
		defer timer.Stop()
	}
	tid, st, err := ptrace.Wait(-1, ptrace.Tracees|ptrace.Untraced)
	if err != nil || tid <= 0 {
		return false
	}
	q.handleTimed(tid, st)
	return tid != sentinel
}

// unsettled names the threads not known to be blocked, each with what it
// was doing: a thread stopped at a pending op, asleep in a timed wait
// lockstep owns, or asleep in the kernel (a futex, a pipe) waits for
// something; one that is starting, runnable or in disk I/O may still make
// progress on its own.
func (q *quiescence) unsettled() []string {
	var out []string
	for th := range q.pt.allThreads() {
		var why string
		switch th.state {
		case tsGated, tsGroupStop:
			continue
		case tsTimedWait:
			if !th.interrupted {
				continue
			}
			why = "waking from a timed wait"
		case tsNew, tsHeld:
			why = "starting"
		case tsAlone:
			why = "held at " + syscallName(th.regs.Syscall())
		default:
			s, _, ok := th.kernelState()
			switch {
			case !ok, s == 'S', s == 'Z', s == 'I', s == 't', s == 'T':
				continue
			case s == 'D' && th.inVforkWait():
				continue
			case s == 'D':
				why = "in uninterruptible sleep (I/O)"
			default:
				why = "runnable"
			}
			if name := q.sleepingIn(th); name != "" {
				why += " in " + name
			}
		}
		out = append(out, th.String()+" "+why)
	}
	sort.Strings(out)
	return out
}
