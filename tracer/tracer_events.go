package tracer

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// handle dispatches one wait status.
func (t *Tracer) handle(tid int, st ptrace.Status) {
	if tid == t.q.sentinel {
		if st.Stopped() {
			unix.Kill(tid, unix.SIGCONT)
		} else {
			t.q.sentinel = 0
		}
		return
	}
	th := t.pt.threads[tid]
	if th == nil {
		if st.Gone() {
			return // a thread that vanished during exec, or a reaped helper
		}
		// A new thread whose stop arrived before its parent's clone event:
		// hold it until the parent names it.
		th = &thread{tab: t.pt, tid: tid, state: tsHeld, heldStatus: true}
		t.pt.addThread(th)
		return
	}
	t.pt.sockOptsChanged(th)
	sig := st.Signal()
	switch st.Kind() {
	case ptrace.Exited, ptrace.Killed:
		t.onExit(th, st)
	case ptrace.SeccompStop:
		t.onSeccomp(th)
	case ptrace.CloneStop:
		t.onClone(th)
	case ptrace.ExecStop:
		t.onExec(th)
	case ptrace.EventStop:
		t.onEventStop(th, sig)
	case ptrace.SyscallTrap:
		th.cont(0)
	default:
		switch {
		case sig == unix.SIGSEGV && t.opts.Clock != nil && t.vt.emulateTSC(th):
			// rdtsc answered from virtual time.
		case sig == unix.SIGILL && t.opts.Clock != nil && t.vt.emulatePatchedTSC(th):
			// A rewritten rdtsc, likewise.
		case th.proc != nil && th.proc.nsInit && t.initSignal(th, sig):
			// Killed for a signal a traced namespace init cannot die of.
		case th.proc != nil && t.vt.restartIgnored(th, sig):
			// A timed wait woken by a signal its process ignores.
		default:
			// Signal-delivery stop: hand the signal on (the JVM relies on
			// SIGSEGV, programs on SIGTERM handlers).
			th.cont(int(sig))
		}
	}
}

func (t *Tracer) onEventStop(th *thread, sig syscall.Signal) {
	switch {
	case th.state == tsNew || th.state == tsHeld:
		// The initial stop of a new thread under PTRACE_SEIZE.
		if th.proc == nil {
			t.pt.setState(th, tsHeld)
			th.heldStatus = true
			return
		}
		th.openThreadFiles()
		parent := th.heldParent
		th.heldParent = nil
		t.contCloned(parent, th)
	case th.state == tsTimedWait && th.interrupted:
		t.vt.finishTimedWait(th)
	case sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU:
		// Group-stop: keep it stopped as the signal wants, but listening so
		// SIGCONT and events still reach us.
		t.pt.setState(th, tsGroupStop)
		ptrace.Listen(th.tid)
	default:
		th.cont(0)
	}
}

func (t *Tracer) onClone(parent *thread) {
	msg, err := ptrace.EventMsg(parent.tid)
	if err != nil {
		parent.cont(0)
		return
	}
	tid := int(msg)
	p := parent.proc
	child := t.pt.threads[tid]
	if child == nil {
		child = &thread{tab: t.pt, tid: tid, state: tsNew}
		t.pt.addThread(child)
	}
	tgid, err := tgidOf(tid)
	if err == nil && tgid == p.pid {
		child.proc = p
		child.lpid = parent.childLPID()
	} else {
		np := &process{
			pid: tid, site: callsite.Process{Pid: tid}, node: p.node, forkPath: p.forkPath + "." + strconv.Itoa(p.nforks),
			threads: map[int]*thread{}, fds: map[int]*fdInfo{}, parent: p, tscSites: p.tscSites, clockEntry: p.clockEntry,
		}
		p.nforks++
		if p.init && p.cmd == nil {
			p.cmd = np
		}
		if t.opts.Random != nil {
			np.rand = t.opts.Random(np.node.name + "/" + np.forkPath)
		}
		np.pidfd, _ = unix.PidfdOpen(tid, 0)
		child.proc = np
		child.lpid = np.firstLPID()
		t.pt.procs[tid] = np
	}
	child.proc.threads[tid] = child
	child.firstCause = parent.lastOp
	if child.heldStatus {
		child.heldStatus = false
		child.openThreadFiles()
		t.contCloned(parent, child)
		return
	}
	// Hold the parent until the child's first stop: see contCloned.
	t.pt.setState(parent, tsHeld)
	child.heldParent = parent
}

// contCloned resumes a thread that cloned and its new thread, once both
// have stopped, parent first. Under the serialized policy the kernel queues
// them in the order they are resumed; resuming each as its stop arrived
// made that order (which of them runs first, and so which glibc arena or Go
// M gets which memory) depend on whether lockstep saw the child's stop
// before the parent's event, which timing decides.
func (t *Tracer) contCloned(parent, child *thread) {
	if parent != nil && t.pt.threads[parent.tid] == parent {
		parent.cont(0)
	}
	child.cont(0)
}

func (t *Tracer) onExec(th *thread) {
	p := th.proc
	former, _ := ptrace.EventMsg(th.tid)
	if int(former) != th.tid {
		// A non-leader thread exec'd and took over the leader's tid.
		if old := t.pt.threads[int(former)]; old != nil {
			t.dropThread(old)
		}
	}
	for tid, other := range p.threads {
		if tid != th.tid {
			t.dropThread(other)
		}
	}
	if th.pending != nil {
		t.ops.dropPending(th.pending)
	}
	p.threads = map[int]*thread{th.tid: th}
	p.execs++
	th.lpid = p.firstLPID()
	th.clones = 0
	th.closeThreadFiles()
	th.openThreadFiles()
	t.forgetAllFds(p)
	p.site.Forget()
	p.scratch = 0 // the image's memory is new
	if t.opts.Clock != nil {
		if err := t.vt.clockReadsWithoutStops(th); err != nil {
			t.log.Warn("hiding vDSO", "thread", th.String(), "err", err)
		}
		// execve clears the rdtsc trap, so set it in the new image.
		if ret, err := th.inject(unix.SYS_PRCTL, unix.PR_SET_TSC, unix.PR_TSC_SIGSEGV); err != nil || ret != 0 {
			t.log.Warn("trapping rdtsc", "thread", th.String(), "ret", ret, "err", err)
		}
		// Where the hypervisor ignores that trap, the image's own reads are
		// rewritten (vtime_tsc.go).
		if n, err := t.vt.patchTSC(th); err != nil {
			t.log.Warn("rewriting rdtsc", "thread", th.String(), "rewritten", n, "err", err)
		}
	}
	if p.node.rand != nil {
		if err := t.seedAuxvRandom(th); err != nil {
			t.log.Warn("seeding AT_RANDOM", "thread", th.String(), "err", err)
		}
	}
	th.cont(0)
}

// seedAuxvRandom replaces the 16 random bytes the kernel gives a new image
// (AT_RANDOM) with bytes from the seed. Go's runtime seeds its own random
// generator (scheduling, select, map order) from them; the C library makes
// its stack canary from them.
//
// Precondition: runs on the tracer thread; th is at its exec stop.
func (t *Tracer) seedAuxvRandom(th *thread) error {
	_, addr, err := auxvEntry(th, atRandom)
	if err != nil || addr == 0 {
		return err
	}
	ni := th.proc.node
	// A stream of its own per exec, apart from the one getrandom reads, so
	// that seeding images does not shift what the programs read.
	r := t.opts.Random(fmt.Sprintf("%s/AT_RANDOM/%d", ni.name, ni.execs))
	ni.execs++
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	return ptrace.WriteMem(th.tid, addr, b[:])
}

func (t *Tracer) dropThread(th *thread) {
	t.pt.sockOptsChanged(th)
	if th.pending != nil {
		t.ops.dropPending(th.pending)
	}
	if parent := th.heldParent; parent != nil && t.pt.threads[parent.tid] == parent && parent.state == tsHeld {
		// Gone before its first stop: its parent waited for it in vain.
		th.heldParent = nil
		parent.cont(0)
	}
	th.closeThreadFiles()
	if th.proc != nil {
		th.proc.node.stir()
	}
	t.pt.removeThread(th)
	if th.proc != nil {
		delete(th.proc.threads, th.tid)
	}
}

// noteDying looks at p's stopped threads after one of its threads ended.
// When that end was the whole group's (exit_group, a fatal signal), the
// kernel woke them to die: they are no longer at their ops but on their way
// out, and the settle waits for their exits, so that the process's end is
// reported in the state it belongs to rather than in the next, or the one
// after, as timing had it.
func (t *Tracer) noteDying(p *process) {
	for _, o := range p.threads {
		switch o.state {
		case tsGated, tsAlone, tsHeld, tsGroupStop:
		default:
			continue
		}
		if s, _, ok := o.kernelState(); ok && (s == 't' || s == 'T') {
			continue
		}
		t.pt.setState(o, tsRunning)
		t.pt.expectEvent()
	}
}

func (t *Tracer) onExit(th *thread, st ptrace.Status) {
	p := th.proc
	t.dropThread(th)
	if p == nil {
		return
	}
	if th.tid != p.pid {
		t.noteDying(p)
		return
	}
	// The leader's exit is reported once the whole group is gone.
	p.exited = true
	if pp := p.parent; pp != nil && !pp.exited {
		// Reaped by lockstep, it is its parent's to wait for now: the
		// kernel sends the parent SIGCHLD, which may end a gated wait.
		t.vt.noteSignal(pp, int(unix.SIGCHLD))
	}
	for _, other := range p.threads {
		t.dropThread(other)
	}
	e := Exit{Node: p.node.name, LPID: p.node.name + "/" + p.forkPath, Pid: p.pid, Root: p.root, Took: p.took}
	if st.Kind() == ptrace.Killed {
		e.Signal = st.Signal()
		if p.fatal != 0 && e.Signal == unix.SIGKILL {
			e.Signal = p.fatal
		}
		if r := p.rootAncestor(); e.Signal == unix.SIGKILL && r != nil && r.nsInit && !r.exited && exiting(r.pid) {
			// The kernel ends a PID namespace with its first process,
			// whose exit waits for the others' (reaped here) to end.
			r.took++
		}
	} else {
		e.Code = st.ExitCode()
		if last := p.node.lastExit; p.init && last != nil {
			// An init exits when no process is left: the last one's exit
			// is the node's.
			e.LPID, e.Code, e.Signal = last.LPID, last.Code, last.Signal
		}
	}
	if !p.root {
		last := e
		p.node.lastExit = &last
	}
	t.exits = append(t.exits, e)
	// Its sockets close with it (when no other process shares them): the
	// FINs are in flight now.
	for _, fi := range p.fds {
		if fi.kind == fdInet && t.net.conns[fi.outKey()] == nil {
			t.net.expectFin(fi.local, fi.peer)
		}
	}
	t.forgetAllFds(p)
	if p.pidfd > 0 {
		unix.Close(p.pidfd)
		p.pidfd = 0
	}
	delete(t.pt.procs, p.pid)
}

func (t *Tracer) killAll() {
	t.killAndReap(func(*process) bool { return true })
	// What is left (a process that survived the kill's five seconds) is
	// forgotten all the same: the cluster's reset kills it, and
	// lockstep's duplicates of its descriptors must close.
	for _, pid := range slices.Sorted(maps.Keys(t.pt.procs)) {
		t.dropProc(t.pt.procs[pid])
	}
	for _, p := range t.ops.fresh {
		if p.chunk != nil && p.chunk.dg != nil {
			t.net.dropDgram(p)
		}
	}
	// A copy: dropping a datagram takes its op out of ordered.
	for _, p := range slices.Clone(t.ops.ordered) {
		if p.chunk != nil && p.chunk.dg != nil {
			t.net.dropDgram(p)
		}
		p.dropped = true
	}
	t.ops.forgetAll()
	for _, c := range t.net.conns {
		c.queue = nil
		t.net.closeConn(c)
	}
	clear(t.net.conns)
	t.net.held = nil
	t.ops.fresh = t.ops.fresh[:0]
	// Reap anything else this thread started.
	for {
		pid, _, err := ptrace.Wait(-1, ptrace.Tracees|ptrace.NoHang)
		if err != nil || pid <= 0 {
			break
		}
	}
	for tid, th := range t.pt.threads {
		th.closeThreadFiles()
		delete(t.pt.threads, tid)
	}
	t.pt.nState = [numStates]int{}
	t.vt.pruneTimers() // every owner is gone: closes lockstep's timerfd duplicates
}

// killAndReap SIGKILLs the processes that match and handles their exits
// until none is left, for at most five seconds; it returns how many are
// still there.
//
// Precondition: runs on the tracer thread.
func (t *Tracer) killAndReap(match func(*process) bool) int {
	alive := func() int {
		n := 0
		for _, p := range t.pt.procs {
			if match(p) {
				n++
			}
		}
		return n
	}
	for _, pid := range slices.Sorted(maps.Keys(t.pt.procs)) {
		if match(t.pt.procs[pid]) {
			t.pt.expectEvent()
			t.pt.stirAll()
			unix.Kill(pid, unix.SIGKILL)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive() > 0 && time.Now().Before(deadline) {
		if t.q.drain(true) == 0 {
			pause(100 * time.Microsecond)
		}
		for _, p := range t.pt.procs {
			// A process whose threads all left without a leader report.
			if match(p) && len(p.threads) == 0 && unix.Kill(p.pid, 0) == unix.ESRCH {
				t.dropProc(p)
			}
		}
	}
	return alive()
}

// dropProc forgets a process that is gone: lockstep's duplicates of its
// descriptors close (a socket it had bound must not outlive it in its
// node's namespace: the next trial's program binds that port), and its
// pidfd.
func (t *Tracer) dropProc(p *process) {
	t.forgetAllFds(p)
	if p.pidfd > 0 {
		unix.Close(p.pidfd)
		p.pidfd = 0
	}
	delete(t.pt.procs, p.pid)
}

// In descriptor order, as the kernel closes them: a duplicate released here
// may be a connection's last reference, and its FIN leaves now.
func (t *Tracer) forgetAllFds(p *process) {
	for _, fd := range slices.Sorted(maps.Keys(p.fds)) {
		t.net.releaseDup(p.fds[fd])
		delete(p.fds, fd)
	}
}

// initSignal handles a signal about to be delivered to a node's namespace
// init. The kernel never lets a container's init die of a signal it has no
// handler for, and while it is traced not even of a fault (abort(), a
// segfault): it would retry the faulting instruction forever. A node's
// program is not meant to be an init, so lockstep kills it as the signal
// would have on a host and reports that signal as the cause. It reports
// whether it did.
//
// Precondition: runs on the tracer thread; th is in a signal-delivery stop.
func (t *Tracer) initSignal(th *thread, sig syscall.Signal) bool {
	if !diesOf(sig) || handlesSignal(th.proc.pid, sig) {
		return false
	}
	th.proc.fatal = sig
	t.pt.expectEvent()
	th.proc.node.stir()
	unix.Kill(th.proc.pid, unix.SIGKILL)
	return true
}

// diesOf reports whether a signal's default action ends the process.
func diesOf(sig syscall.Signal) bool {
	switch sig {
	case unix.SIGCHLD, unix.SIGCONT, unix.SIGURG, unix.SIGWINCH,
		unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return false
	}
	return sig > 0 && sig <= 64
}

// handlesSignal reports whether the process catches or ignores sig (the
// SigCgt and SigIgn masks of /proc/PID/status); when that cannot be read it
// says yes, so the signal is delivered as before.
func handlesSignal(pid int, sig syscall.Signal) bool {
	for _, field := range []string{"SigCgt", "SigIgn"} {
		v, err := statusField(pid, field)
		if err != nil {
			return true
		}
		mask, err := strconv.ParseUint(v, 16, 64)
		if err != nil || mask&(1<<(uint(sig)-1)) != 0 {
			return true
		}
	}
	return false
}

// onSeccomp handles a gated syscall stop: the syscall's gate answers it,
// releases it at once or turns it into a pending op; a syscall its gate
// declines runs natively.
func (t *Tracer) onSeccomp(th *thread) {
	t.stats.Stops++
	if th.connecting != nil {
		t.net.finishConnect(th)
	}
	if th.state == tsTimedWait {
		th.interrupted = false
	}
	t.pt.setState(th, tsGated)
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		t.pt.setState(th, tsRunning)
		return
	}
	c := decodeCall(th.regs.Syscall(), th.regs.Args())
	if th.proc.node.disk != nil && t.dk.onDisk(th, c) {
		return
	}
	if g, ok := t.gates[c.nr]; ok && (t.opts.Clock != nil || !g.clock) && g.handle(th, c) {
		return
	}
	th.allow()
}
