package tracer

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// onSleep makes a sleep an op whose deadline is the virtual time it ends
// at.
func (vt *vtime) onSleep(th *thread, c call) bool {
	var rel int64
	var ok bool
	switch c.nr {
	case unix.SYS_NANOSLEEP:
		rel, ok = readTimespec(th.tid, c.timeout)
	case unix.SYS_CLOCK_NANOSLEEP:
		vnow, virt := vt.readClock(th.proc.node, int32(c.id))
		if !virt {
			return false
		}
		rel, ok = readTimespec(th.tid, c.timeout)
		if ok && c.flags&1 != 0 { // TIMER_ABSTIME
			rel = vt.untilWall(th.proc.node, int32(c.id), rel, vnow)
		}
	}
	if !ok {
		return false // let the kernel report EFAULT/EINVAL
	}
	po := vt.ops.newPending(th, sched.Sleep, c)
	po.deadline = vt.now() + max(rel, 0)
	return true
}

// A timedWait is a syscall that waits with a timeout lockstep takes over:
// the wait proceeds in the kernel without one, and lockstep interrupts it
// at its virtual deadline. Without this, a wait longer than the grace
// period ended the trial as a deadlock, and a shorter one ran in real time.
type timedWait struct {
	// abs tells an absolute timeout's clock from the call; nil for a
	// relative timeout. (The timeout is the call's: its syscallTable
	// layout says which argument points at the struct timespec; NULL:
	// the wait is untimed and runs as it is.)
	abs func(c call) int32
	// expired is what the syscall returns when its timeout ends it.
	expired unix.Errno
}

// timedWaits are the timed waits besides futex's (whose command decides,
// onFutexWait). io_getevents and io_uring's timeouts have no entry: the
// filter refuses Linux AIO and io_uring.
var timedWaits = map[int]timedWait{
	unix.SYS_RT_SIGTIMEDWAIT: {expired: unix.EAGAIN},
	unix.SYS_SEMTIMEDOP:      {expired: unix.EAGAIN},
	unix.SYS_MQ_TIMEDRECEIVE: {abs: realtime, expired: unix.ETIMEDOUT},
	unix.SYS_MQ_TIMEDSEND:    {abs: realtime, expired: unix.ETIMEDOUT},
	// futex_waitv's clock is its last argument.
	unix.SYS_FUTEX_WAITV: {abs: func(c call) int32 { return int32(c.id) }, expired: unix.ETIMEDOUT},
}

func realtime(call) int32 { return unix.CLOCK_REALTIME }

// onTimedWait takes over the timeout of a timedWaits syscall.
func (vt *vtime) onTimedWait(th *thread, c call) bool {
	w := timedWaits[c.nr]
	if c.timeout == 0 {
		return false // untimed
	}
	ns, ok := readTimespec(th.tid, c.timeout)
	if !ok {
		return false // let the kernel report EFAULT/EINVAL
	}
	if w.abs == nil && ns == 0 {
		return false // a poll: it answers at once in the kernel
	}
	deadline := vt.now() + ns
	if w.abs != nil {
		clk := w.abs(c)
		vnow, virt := vt.readClock(th.proc.node, clk)
		if !virt {
			return false
		}
		deadline = vt.now() + vt.untilWall(th.proc.node, clk, ns, vnow)
	}
	return vt.takeTimeout(th, c, c.timeoutArg(), deadline, w.expired)
}

// onUnixRecv takes over the receive timeout (SO_RCVTIMEO) of a blocking
// recv on one of the node's own Unix sockets, whose bytes lockstep does
// not gate: the recv waits in the kernel, and lockstep interrupts it at
// its virtual deadline (EAGAIN), as a timed wait. Without this a wait
// longer than the grace period ended the trial as a deadlock (nothing
// pending, no deadline), a shorter one ran in real time. The timeout is
// the socket's, not an argument, so the kernel's own stays armed: as long
// in real time, it comes later unless the trial holds virtual time still
// that long.
func (vt *vtime) onUnixRecv(th *thread, c call, fi *fdInfo) bool {
	if vt.opts.Clock == nil {
		return false
	}
	o := vt.pt.unixSockOpts(th.proc, c.fd, fi)
	if o.rcvTimeo <= 0 || o.nonblock || dontWait(c) {
		return false
	}
	return vt.takeTimeout(th, c, noTimeoutArg, vt.now()+o.rcvTimeo, unix.EAGAIN)
}

// restartIgnored makes a thread lockstep let into a timed wait wait again
// when a signal its process ignores interrupted the wait with EINTR, and
// reports whether it did. Natively the kernel drops an ignored signal
// before it reaches the thread, but a traced thread gets every signal, and
// a wait on a socket with a receive timeout answers one EINTR, which the
// program would never have seen (a node's child exiting ended its Unix
// recv). The wait's virtual deadline starts again with the new call. Only
// a wait whose timeout is the socket's: the others went into the kernel
// without their timeout argument, and would wait again without one.
//
// Precondition: runs on the tracer thread; th is at a signal-delivery
// stop.
func (vt *vtime) restartIgnored(th *thread, sig syscall.Signal) bool {
	if th.state != tsTimedWait || th.interrupted || th.waitArg != noTimeoutArg || !ignores(th.proc.pid, sig) {
		return false
	}
	if ptrace.GetRegs(th.tid, &th.regs) != nil || th.regs.Syscall() != th.waitNr || th.regs.Result() != -int64(unix.EINTR) {
		return false
	}
	th.regs.Reenter()
	if ptrace.SetRegs(th.tid, &th.regs) != nil {
		return false
	}
	th.cont(int(sig))
	return true
}

// ignores says whether process pid ignores sig: it has no handler for it,
// and its action is to ignore it, set so or by default (SIGCHLD, SIGCONT,
// SIGURG and SIGWINCH).
func ignores(pid int, sig syscall.Signal) bool {
	mask := func(name string) uint64 {
		v, err := statusField(pid, name)
		if err != nil {
			return 0
		}
		m, _ := strconv.ParseUint(v, 16, 64)
		return m
	}
	bit := uint64(1) << (sig - 1)
	if sig < 1 || sig > 64 || mask("SigCgt")&bit != 0 {
		return false
	}
	switch sig {
	case unix.SIGCHLD, unix.SIGCONT, unix.SIGURG, unix.SIGWINCH:
		return true
	}
	return mask("SigIgn")&bit != 0
}

// onFutexWait takes over the timeout of a futex wait (the filter stops
// only waits that carry one).
func (vt *vtime) onFutexWait(th *thread, c call) bool {
	cmd := c.flags & futexCmdMask
	abs, ok := readTimespec(th.tid, c.timeout)
	if !ok {
		return false
	}
	var deadline int64
	switch cmd {
	case futexWait:
		deadline = vt.now() + abs
	case futexWaitBitset, futexLockPI, futexLockPI2, futexWaitReqPI:
		// Absolute timeouts: LOCK_PI's always on CLOCK_REALTIME, the
		// others' on CLOCK_MONOTONIC unless FUTEX_CLOCK_REALTIME. A PI
		// lock interrupted at its deadline gives up the wait as a timeout
		// does (the kernel answers ERESTARTNOINTR, finishTimedWait
		// ETIMEDOUT).
		clk := int32(unix.CLOCK_MONOTONIC)
		if cmd == futexLockPI || c.flags&256 != 0 { // FUTEX_CLOCK_REALTIME
			clk = unix.CLOCK_REALTIME
		}
		vnow, _ := vt.readClock(th.proc.node, clk)
		deadline = vt.now() + vt.untilWall(th.proc.node, clk, abs, vnow)
	default:
		return false
	}
	if cmd != futexWait && cmd != futexWaitBitset {
		// A PI lock past its deadline still takes a free lock (the kernel
		// tries before it looks at the timeout): it goes into the kernel
		// and is interrupted at once if it waits.
		deadline = max(deadline, vt.now()+1)
	}
	if !vt.takeTimeout(th, c, c.timeoutArg(), deadline, unix.ETIMEDOUT) {
		return false
	}
	th.waitRequeued = cmd == futexWaitReqPI
	return true
}

// takeTimeout lets the wait c at th proceed without the timeout in
// argument arg (noTimeoutArg: none to clear), to be interrupted at
// deadline; one already due answers expired.
func (vt *vtime) takeTimeout(th *thread, c call, arg int, deadline int64, expired unix.Errno) bool {
	vt.stats.TimedWaits++
	if deadline <= vt.now() {
		th.fake(-int64(expired))
		return true
	}
	if arg != noTimeoutArg {
		th.regs.SetArg(arg, 0) // the timeout
		if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
			return false
		}
	}
	th.waitDeadline = deadline
	th.waitNr, th.waitAddr, th.waitExpired, th.waitArg = c.nr, c.first(), expired, arg
	th.waitRequeued = false
	th.interrupted = false
	vt.pt.setState(th, tsTimedWait)
	vt.queue.add(th)
	if err := ptrace.Cont(th.tid, 0); err != nil {
		vt.pt.setState(th, tsRunning)
	}
	return true
}

// wakeDueTimedWaits interrupts the timed wait whose virtual deadline passed
// first (ties by LPID). One at a time: waiters due at the same virtual
// instant (the JVM's threads often are) would otherwise race on the
// runtime's untimed locks, and which of them won would depend on timing;
// the next settle wakes the next one.
func (vt *vtime) wakeDueTimedWaits() {
	if vt.opts.Clock == nil {
		return
	}
	now := vt.now()
	var first *thread
	interrupting := false
	vt.queue.each(vt, func(o deadlineOwner, _ Deadline, _ bool) {
		th, ok := o.(*thread)
		if !ok || th.waitDeadline > now {
			return
		}
		if th.interrupted {
			interrupting = true // still on its way out of the wait
		}
		if first == nil || th.waitDeadline < first.waitDeadline ||
			th.waitDeadline == first.waitDeadline && th.lpid < first.lpid {
			first = th
		}
	})
	if first == nil || interrupting {
		return
	}
	if !first.inWait() {
		vt.pt.setState(first, tsRunning) // woken meanwhile
		return
	}
	first.interrupted = true
	if err := ptrace.Interrupt(first.tid); err != nil {
		first.interrupted = false
		vt.pt.setState(first, tsRunning)
	}
}

// inWait reads /proc/.../syscall to see whether the thread still sleeps in
// the timed wait lockstep owns.
func (th *thread) inWait() bool {
	b, err := readSmall("/proc/" + strconv.Itoa(th.proc.pid) + "/task/" + strconv.Itoa(th.tid) + "/syscall")
	if err != nil {
		return false
	}
	var nr int
	var addr uint64
	fields := splitFields(b)
	if len(fields) < 2 {
		return false
	}
	nr, _ = strconv.Atoi(fields[0])
	addr, _ = strconv.ParseUint(fields[1], 0, 64)
	return nr == th.waitNr && addr == th.waitAddr
}

// inVforkWait reports whether the thread sleeps in vfork (or a clone with
// CLONE_VFORK, as posix_spawn makes) waiting for its child to exec or exit.
func (th *thread) inVforkWait() bool {
	base := "/proc/" + strconv.Itoa(th.proc.pid) + "/task/" + strconv.Itoa(th.tid)
	sc, err := readSmall(base + "/syscall")
	if err != nil {
		return false
	}
	f := splitFields(sc)
	if len(f) == 0 {
		return false
	}
	nr, _ := strconv.Atoi(f[0])
	wchan, err := readSmall(base + "/wchan")
	return err == nil && vforkWait(nr, strings.TrimSpace(wchan))
}

// vforkWait tells a vfork parent's wait for its child from the rest of
// what a thread may sleep in inside vfork, clone or clone3 by its wait
// channel: wait_for_vfork_done, which the kernel inlines into
// kernel_clone. A fork still copying its parent (dup_mmap, asleep while it
// waits for memory or a lock) is in the same syscall but waits for no one:
// it goes on by itself. Taken for a vfork wait, it had quiescence declared
// in the middle of a fork on a loaded machine, and virtual time ran on
// without the child (RabbitMQ's boot stalled in 3 trials of 20).
func vforkWait(nr int, wchan string) bool {
	switch nr {
	case unix.SYS_VFORK, unix.SYS_CLONE, unix.SYS_CLONE3:
		return wchan == "kernel_clone" || wchan == "wait_for_vfork_done"
	}
	return false
}

// futex(2) commands, as the seccomp filter also tells them apart.
const (
	futexCmdMask    = 0x7f // FUTEX_CMD_MASK without PRIVATE and CLOCK_REALTIME
	futexWait       = 0
	futexLockPI     = 6
	futexWaitBitset = 9
	futexWaitReqPI  = 11 // FUTEX_WAIT_REQUEUE_PI
	futexLockPI2    = 13
)

const (
	errRestartSys    = 512
	errRestartNoIntr = 513
	errRestartNoHand = 514
	errRestartBlock  = 516
)

// finishTimedWait completes an interrupted timed wait as a timeout.
func (vt *vtime) finishTimedWait(th *thread) {
	th.interrupted = false
	if err := ptrace.GetRegs(th.tid, &th.regs); err == nil && th.regs.Syscall() == th.waitNr {
		switch r := -th.regs.Result(); {
		case r == errRestartSys, r == errRestartNoIntr, r == errRestartNoHand, r == errRestartBlock, r == int64(unix.EINTR),
			th.waitRequeued && r == int64(unix.EAGAIN):
			th.regs.SetResult(-int64(th.waitExpired))
			ptrace.SetRegs(th.tid, &th.regs)
		}
	}
	th.cont(0)
}

// onFutex takes over a timed futex wait's timeout (the filter stops only
// waits that carry one).
func (vt *vtime) onFutex(th *thread, c call) bool {
	return vt.onFutexWait(th, c)
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
	if po.call.nr != unix.SYS_RECVMMSG || po.call.timeout == 0 || vt.opts.Clock == nil {
		return
	}
	ns, ok := readTimespec(po.th.tid, po.call.timeout)
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
	if ptrace.WriteMem(th.tid, p.call.timeout, b[:]) != nil || left == 0 {
		return
	}
	th.regs.SetArg(p.call.timeoutArg(), 0)
	ptrace.SetRegs(th.tid, &th.regs)
}

func (vt *vtime) enabledSleep(p *pendingOp) bool { return p.deadline <= vt.now() }

// releaseSleep ends a sleep op: at its deadline it returns 0; released
// early (a timer signal is pending) it returns EINTR with the time left.
func (vt *vtime) releaseSleep(p *pendingOp) (Released, error) {
	r := Released{Causes: p.causes}
	left := p.deadline - vt.now()
	if left <= 0 {
		p.th.fake(0)
		return r, nil
	}
	rem := uint64(0)
	switch {
	case p.call.nr == unix.SYS_NANOSLEEP:
		rem = p.call.out
	case p.call.nr == unix.SYS_CLOCK_NANOSLEEP && p.call.flags&1 == 0: // relative only
		rem = p.call.out
	}
	if rem != 0 {
		var b [16]byte
		putTimespec(b[:], left)
		ptrace.WriteMem(p.th.tid, rem, b[:])
	}
	p.th.fake(-int64(unix.EINTR))
	return r, nil
}
