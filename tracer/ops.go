package tracer

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// pendingOp is a sched.Op plus what the tracer needs to probe and release it.
type pendingOp struct {
	op   sched.Op
	seq  uint64 // order of appearance within a quiescent round
	th   *thread
	nr   int
	args [6]uint64
	fd   int
	fi   *fdInfo
	// deadline is the virtual time (ns) at which a sleep or timeout expires;
	// -1 when the op has none.
	deadline int64
	// immediate: a zero timeout (poll) or a non-blocking socket; the op
	// cannot block whatever the state.
	immediate bool
	// silent: a connect to an address on the cluster's subnet that no node
	// has; no one will answer (see silentConnect).
	silent  bool
	probe   []unix.PollFd
	chunk   *chunk // for deliveries
	causes  []uint64
	dropped bool
}

func (t *Tracer) newPending(th *thread, kind sched.Kind, nr int, args [6]uint64) *pendingOp {
	t.seq++
	p := &pendingOp{th: th, nr: nr, args: args, fd: -1, deadline: -1, seq: t.seq}
	p.op = sched.Op{
		Node: th.proc.node.name, LPID: th.lpid, Kind: kind,
		Syscall: t.syscallName(nr),
	}
	t0 := time.Now()
	p.op.Site = t.sites.Site(&th.proc.site, th.regs.SP(), th.regs.FP(), t.opts.SiteFrames)
	t.stats.SiteTime += time.Since(t0)
	if th.firstCause != 0 {
		p.causes = append(p.causes, th.firstCause)
		th.firstCause = 0
	}
	th.state = tsGated
	th.pending = p
	t.fresh = append(t.fresh, p)
	t.stats.Ops++
	return p
}

func (t *Tracer) dropPending(p *pendingOp) {
	p.dropped = true
	if p.op.ID != 0 {
		delete(t.pending, p.op.ID)
	}
	if p.th != nil && p.th.pending == p {
		p.th.pending = nil
	}
}

// allow resumes a stopped thread into its real syscall.
func (t *Tracer) allow(th *thread) {
	t.stats.Released++
	t.cont(th, 0)
}

// fake skips the syscall and makes it return ret.
func (t *Tracer) fake(th *thread, ret int64) {
	th.regs.Skip(ret)
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		// ESRCH: another thread's exit_group took this one down while it
		// sat in its stop; its exit event follows.
		lvl := slog.LevelWarn
		if err == unix.ESRCH {
			lvl = slog.LevelDebug
		}
		t.log.Log(context.Background(), lvl, "faking syscall result", "thread", th.String(), "err", err)
	}
	t.cont(th, 0)
}

func (t *Tracer) gated(a netip.Addr) bool { return t.opts.Gated(a.Unmap()) }

func (t *Tracer) inbox(a netip.Addr) string {
	if n := t.byAddr[a.Unmap()]; n != nil {
		return "inbox:" + n.name
	}
	return "inbox:" + a.String()
}

// onSeccomp handles a gated syscall stop: the syscall's gate answers it,
// releases it at once or turns it into a pending op; a syscall its gate
// declines runs natively.
func (t *Tracer) onSeccomp(th *thread) {
	t.stats.Stops++
	if th.connecting != nil {
		t.finishConnect(th)
	}
	if th.state == tsTimedWait {
		th.interrupted = false
	}
	th.state = tsGated
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		th.state = tsRunning
		return
	}
	nr := th.regs.Syscall()
	if g, ok := t.gates[nr]; ok && (t.opts.Clock != nil || !g.clock) && g.handle(t, th, nr, th.regs.Args()) {
		return
	}
	t.allow(th)
}

// onClockGettime answers clock_gettime from virtual time.
func (t *Tracer) onClockGettime(th *thread, _ int, a [6]uint64) bool {
	ns, ok := t.readClock(th.proc.node, int32(a[0]))
	if !ok {
		return false
	}
	t.stats.ClockReads++
	if a[1] != 0 {
		var b [16]byte
		putTimespec(b[:], ns)
		ptrace.WriteMem(th.tid, a[1], b[:])
	}
	t.fake(th, 0)
	return true
}

// onGettimeofday answers gettimeofday from the virtual wall clock.
func (t *Tracer) onGettimeofday(th *thread, _ int, a [6]uint64) bool {
	t.stats.ClockReads++
	ns, _ := t.readClock(th.proc.node, unix.CLOCK_REALTIME)
	if a[0] != 0 {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ns/1e9))
		binary.LittleEndian.PutUint64(b[8:], uint64(ns%1e9/1e3))
		ptrace.WriteMem(th.tid, a[0], b[:])
	}
	t.fake(th, 0)
	return true
}

// onTime answers time from the virtual wall clock.
func (t *Tracer) onTime(th *thread, _ int, a [6]uint64) bool {
	t.stats.ClockReads++
	ns, _ := t.readClock(th.proc.node, unix.CLOCK_REALTIME)
	if a[0] != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(ns/1e9))
		ptrace.WriteMem(th.tid, a[0], b[:])
	}
	t.fake(th, ns/1e9)
	return true
}

// onGetrandom fills the buffer from the process's seeded stream.
func (t *Tracer) onGetrandom(th *thread, _ int, a [6]uint64) bool {
	if th.proc.rand == nil {
		return false
	}
	t.fakeRandom(th, a[0], a[1])
	return true
}

// onRecv makes a receive from another node's connection (or a datagram
// socket) an op; a read of the random device is answered from the seed.
func (t *Tracer) onRecv(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := t.fdOf(p, fd)
	if fi.kind == fdRandom && nr == unix.SYS_READ && p.rand != nil {
		t.fakeRandom(th, a[1], a[2])
		return true
	}
	if fi.kind != fdInet || !t.sockGated(th, fi, nr, a) {
		return false
	}
	po := t.newPending(th, sched.Recv, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Object = "inbox:" + p.node.name
	po.op.Peer = addrString(fi.peer)
	po.op.Conn = fi.inKey()
	po.op.Bytes = int(a[2])
	po.immediate = t.nonblocking(fi, nr, a)
	t.sockTimeout(po, unix.SO_RCVTIMEO)
	if nr == unix.SYS_RECVMSG || nr == unix.SYS_READV {
		po.op.Bytes = 0
	}
	return true
}

// onSend makes a send on another node's connection (or a datagram socket)
// an op.
func (t *Tracer) onSend(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := t.fdOf(p, fd)
	if fi.kind != fdInet || !t.sockGated(th, fi, nr, a) {
		return false
	}
	po := t.newPending(th, sched.Send, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = addrString(fi.peer)
	po.op.Conn = fi.outKey()
	if fi.sockType == unix.SOCK_DGRAM {
		d := t.dgramDest(th, fi, nr, a)
		po.op.Peer, po.op.Conn = d.String(), t.dgramSource(p, fi).String()+">"+d.String()
	}
	if fi.peer.IsValid() {
		po.op.Object = "" // enqueuing is local; the delivery touches the inbox
	}
	if nr == unix.SYS_WRITE || nr == unix.SYS_SENDTO {
		po.op.Bytes = int(a[2])
	}
	return true
}

// onClose makes closing a listener or a connection to another node an op
// (its FIN is a message); any other close only updates the fd cache.
func (t *Tracer) onClose(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := p.fds[fd]
	if fi != nil && fi.kind == fdInet && (fi.listening || (fi.peer.IsValid() && t.gated(fi.peer.Addr()))) {
		po := t.newPending(th, sched.Close, nr, a)
		po.fd, po.fi = fd, fi
		po.op.Peer = addrString(fi.peer)
		po.op.Conn = fi.outKey()
		return true
	}
	t.releaseDup(t.forgetFd(p, fd))
	return false
}

// onShutdown makes shutting down a connection to another node an op.
func (t *Tracer) onShutdown(th *thread, nr int, a [6]uint64) bool {
	fd := int(a[0])
	fi := t.fdOf(th.proc, fd)
	if fi.kind != fdInet || !fi.peer.IsValid() || !t.gated(fi.peer.Addr()) {
		return false
	}
	po := t.newPending(th, sched.Shutdown, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = addrString(fi.peer)
	po.op.Conn = fi.outKey()
	return true
}

// onDup forgets what the target descriptor of dup2/dup3 was.
func (t *Tracer) onDup(th *thread, _ int, a [6]uint64) bool {
	if int(a[1]) != int(a[0]) {
		t.releaseDup(t.forgetFd(th.proc, int(a[1])))
	}
	return false
}

// onCloseRange forgets the descriptors close_range closes.
func (t *Tracer) onCloseRange(th *thread, _ int, a [6]uint64) bool {
	p := th.proc
	for fd := range p.fds {
		if uint64(fd) >= a[0] && uint64(fd) <= a[1] {
			t.releaseDup(t.forgetFd(p, fd))
		}
	}
	return false
}

// onConnect makes a connect to another node (or to an address on the
// subnet that no node has) an op.
func (t *Tracer) onConnect(th *thread, nr int, a [6]uint64) bool {
	fam, ap := decodeSockaddr(th.tid, a[1], a[2])
	if (fam != unix.AF_INET && fam != unix.AF_INET6) || !t.gated(ap.Addr()) {
		return false
	}
	fd := int(a[0])
	fi := t.fdOf(th.proc, fd)
	po := t.newPending(th, sched.Connect, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = ap.String()
	po.op.Object = "listen:" + ap.String()
	po.immediate = fi.dup >= 0 && isNonblocking(fi.dup)
	if t.opts.Host != nil && !t.opts.Host(ap.Addr().Unmap()) {
		po.silent = true
		if !po.immediate && t.opts.Clock != nil {
			po.deadline = t.now() + int64(silentConnect)
		}
	}
	return true
}

// onAccept makes an accept on an internet socket an op.
func (t *Tracer) onAccept(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := t.fdOf(p, fd)
	if fi.kind != fdInet {
		return false
	}
	po := t.newPending(th, sched.Accept, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Object = "listen:" + t.listenKey(p, fi)
	po.immediate = fi.dup >= 0 && isNonblocking(fi.dup)
	t.sockTimeout(po, unix.SO_RCVTIMEO)
	return true
}

// onFutex takes over a timed futex wait's timeout (the filter stops only
// waits that carry one).
func (t *Tracer) onFutex(th *thread, _ int, a [6]uint64) bool {
	return t.onTimedWait(th, a)
}

func addrString(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
}

// listenKey names a listener by the node's address even when it is bound to
// the wildcard address, so that connects and accepts agree.
func (t *Tracer) listenKey(p *process, fi *fdInfo) string {
	a := fi.local.Addr()
	if a.IsUnspecified() && p.node.addr.IsValid() {
		a = p.node.addr
	}
	return netip.AddrPortFrom(a, fi.local.Port()).String()
}

// sockGated says whether a socket call talks to another node.
func (t *Tracer) sockGated(th *thread, fi *fdInfo, nr int, a [6]uint64) bool {
	if fi.sockType == unix.SOCK_DGRAM {
		return nr != unix.SYS_SENDMMSG && t.dgramGated(th, fi, nr, a)
	}
	if fi.peer.IsValid() {
		return t.gated(fi.peer.Addr())
	}
	return false
}

func isNonblocking(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_NONBLOCK != 0
}

func (t *Tracer) nonblocking(fi *fdInfo, nr int, a [6]uint64) bool {
	if fi.dup >= 0 && isNonblocking(fi.dup) {
		return true
	}
	switch nr {
	case unix.SYS_RECVFROM:
		return a[3]&unix.MSG_DONTWAIT != 0
	case unix.SYS_RECVMSG:
		return a[2]&unix.MSG_DONTWAIT != 0
	}
	return false
}

func (t *Tracer) fakeRandom(th *thread, buf, count uint64) {
	n := count
	if n > 1<<20 {
		n = 1 << 20
	}
	b := make([]byte, n)
	io.ReadFull(th.proc.rand, b)
	if err := ptrace.WriteMem(th.tid, buf, b); err != nil {
		t.fake(th, -int64(unix.EFAULT))
		return
	}
	t.fake(th, int64(n))
}

func putTimespec(b []byte, ns int64) {
	binary.LittleEndian.PutUint64(b, uint64(ns/1e9))
	binary.LittleEndian.PutUint64(b[8:], uint64(ns%1e9))
}

func (t *Tracer) readTimespec(pid int, addr uint64) (int64, bool) {
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

// never is a deadline so far away that the clock never jumps to it.
const never = int64(1) << 62

func (t *Tracer) now() int64 { return int64(t.opts.Clock.Now()) }

func (t *Tracer) onSleep(th *thread, nr int, a [6]uint64) bool {
	var rel int64
	var ok bool
	switch nr {
	case unix.SYS_NANOSLEEP:
		rel, ok = t.readTimespec(th.tid, a[0])
	case unix.SYS_CLOCK_NANOSLEEP:
		vnow, virt := t.readClock(th.proc.node, int32(a[0]))
		if !virt {
			return false
		}
		rel, ok = t.readTimespec(th.tid, a[2])
		if ok && a[1]&1 != 0 { // TIMER_ABSTIME
			rel = t.untilWall(th.proc.node, int32(a[0]), rel, vnow)
		}
	}
	if !ok {
		return false // let the kernel report EFAULT/EINVAL
	}
	po := t.newPending(th, sched.Sleep, nr, a)
	po.deadline = t.now() + max(rel, 0)
	return true
}

// onTimedWait takes over the timeout of a futex wait: the wait proceeds in
// the kernel without one, and lockstep interrupts it at its virtual deadline.
func (t *Tracer) onTimedWait(th *thread, a [6]uint64) bool {
	cmd := a[1] & futexCmdMask
	abs, ok := t.readTimespec(th.tid, a[3])
	if !ok {
		return false
	}
	var deadline int64
	switch cmd {
	case futexWait:
		deadline = t.now() + abs
	case futexWaitBitset:
		clk := int32(unix.CLOCK_MONOTONIC)
		if a[1]&256 != 0 { // FUTEX_CLOCK_REALTIME
			clk = unix.CLOCK_REALTIME
		}
		vnow, _ := t.readClock(th.proc.node, clk)
		deadline = t.now() + t.untilWall(th.proc.node, clk, abs, vnow)
	default:
		return false
	}
	t.stats.TimedWaits++
	if deadline <= t.now() {
		t.fake(th, -int64(unix.ETIMEDOUT))
		return true
	}
	th.regs.SetArg(3, 0) // the timeout
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	th.waitDeadline = deadline
	th.waitAddr = a[0]
	th.interrupted = false
	th.state = tsTimedWait
	if err := ptrace.Cont(th.tid, 0); err != nil {
		th.state = tsRunning
	}
	return true
}

// wakeDueTimedWaits interrupts the futex wait whose virtual deadline passed
// first (ties by LPID). One at a time: waiters due at the same virtual
// instant (the JVM's threads often are) would otherwise race on the
// runtime's untimed locks, and which of them won would depend on timing;
// the next settle wakes the next one.
func (t *Tracer) wakeDueTimedWaits() {
	if t.opts.Clock == nil {
		return
	}
	now := t.now()
	var first *thread
	for _, th := range t.threads {
		if th.state != tsTimedWait || th.waitDeadline > now {
			continue
		}
		if th.interrupted {
			return // still on its way out of the wait
		}
		if first == nil || th.waitDeadline < first.waitDeadline ||
			th.waitDeadline == first.waitDeadline && th.lpid < first.lpid {
			first = th
		}
	}
	if first == nil {
		return
	}
	if !first.inFutex() {
		first.state = tsRunning // woken meanwhile
		return
	}
	first.interrupted = true
	if err := ptrace.Interrupt(first.tid); err != nil {
		first.interrupted = false
		first.state = tsRunning
	}
}

// inFutex reads /proc/.../syscall to see whether the thread still sleeps in
// the futex wait lockstep owns.
func (th *thread) inFutex() bool {
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
	return nr == unix.SYS_FUTEX && addr == th.waitAddr
}

// inVforkWait reports whether the thread sleeps in vfork/clone waiting for
// its child to exec or exit.
func (th *thread) inVforkWait() bool {
	b, err := readSmall("/proc/" + strconv.Itoa(th.proc.pid) + "/task/" + strconv.Itoa(th.tid) + "/syscall")
	if err != nil {
		return false
	}
	f := splitFields(b)
	if len(f) == 0 {
		return false
	}
	nr, _ := strconv.Atoi(f[0])
	return nr == unix.SYS_VFORK || nr == unix.SYS_CLONE || nr == unix.SYS_CLONE3
}

func readSmall(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var buf [256]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\n' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// futex(2) commands, as the seccomp filter also tells them apart.
const (
	futexCmdMask    = 0x7f // FUTEX_CMD_MASK without PRIVATE and CLOCK_REALTIME
	futexWait       = 0
	futexWaitBitset = 9
)

const (
	errRestartSys    = 512
	errRestartNoIntr = 513
	errRestartNoHand = 514
	errRestartBlock  = 516
)

// finishTimedWait completes an interrupted futex wait as a timeout.
func (t *Tracer) finishTimedWait(th *thread) {
	th.interrupted = false
	if err := ptrace.GetRegs(th.tid, &th.regs); err == nil && th.regs.Syscall() == unix.SYS_FUTEX {
		switch -th.regs.Result() {
		case errRestartSys, errRestartNoIntr, errRestartNoHand, errRestartBlock, int64(unix.EINTR):
			th.regs.SetResult(-int64(unix.ETIMEDOUT))
			ptrace.SetRegs(th.tid, &th.regs)
		}
	}
	t.cont(th, 0)
}

// onPoll turns a poll-family call into an op with a probe set and deadline.
func (t *Tracer) onPoll(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	po := t.newPending(th, sched.Poll, nr, a)
	po.op.Object = "inbox:" + p.node.name
	var timeout int64 = -1 // ns, -1 infinite
	switch nr {
	case unix.SYS_POLL, unix.SYS_PPOLL:
		n := int(a[1])
		if n > 4096 {
			n = 4096
		}
		buf := make([]byte, 8*n)
		if n > 0 && ptrace.ReadMem(th.tid, a[0], buf) == nil {
			for i := 0; i < n; i++ {
				fd := int(int32(binary.LittleEndian.Uint32(buf[8*i:])))
				ev := int16(binary.LittleEndian.Uint16(buf[8*i+4:]))
				t.addProbe(po, fd, ev)
			}
		}
		if nr == unix.SYS_POLL {
			if ms := int32(a[2]); ms >= 0 {
				timeout = int64(ms) * 1e6
			}
		} else if a[2] != 0 {
			if ns, ok := t.readTimespec(th.tid, a[2]); ok {
				timeout = ns
			}
		}
	case unix.SYS_SELECT, unix.SYS_PSELECT6:
		nfds := int(a[0])
		if nfds > 1024 {
			nfds = 1024
		}
		sets := [3]uint64{a[1], a[2], a[3]}
		events := [3]int16{unix.POLLIN, unix.POLLOUT, unix.POLLPRI}
		for s, addr := range sets {
			if addr == 0 || nfds == 0 {
				continue
			}
			buf := make([]byte, (nfds+63)/64*8)
			if ptrace.ReadMem(th.tid, addr, buf) != nil {
				continue
			}
			for fd := 0; fd < nfds; fd++ {
				if buf[fd/8]&(1<<(fd%8)) != 0 {
					t.addProbe(po, fd, events[s])
				}
			}
		}
		if a[4] != 0 {
			if nr == unix.SYS_SELECT {
				var b [16]byte
				if ptrace.ReadMem(th.tid, a[4], b[:]) == nil {
					sec := int64(binary.LittleEndian.Uint64(b[:]))
					usec := int64(binary.LittleEndian.Uint64(b[8:]))
					timeout = sec*1e9 + usec*1e3
				}
			} else if ns, ok := t.readTimespec(th.tid, a[4]); ok {
				timeout = ns
			}
		}
	default: // epoll family: the epoll fd is readable when events are ready
		t.addProbe(po, int(a[0]), unix.POLLIN)
		if nr == unix.SYS_EPOLL_PWAIT2 {
			if a[3] != 0 {
				if ns, ok := t.readTimespec(th.tid, a[3]); ok {
					timeout = ns
				}
			}
		} else if ms := int32(a[3]); ms >= 0 {
			timeout = int64(ms) * 1e6
		}
	}
	switch {
	case timeout == 0:
		po.immediate = true
	case timeout > 0 && t.opts.Clock != nil:
		po.deadline = t.now() + timeout
	case timeout > 0:
		// Without virtual time a timeout is real; let it count as ready so
		// lockstep never blocks on it.
		po.immediate = true
	}
	return true
}

func (t *Tracer) addProbe(po *pendingOp, fd int, ev int16) {
	if fd < 0 {
		return
	}
	p := po.th.proc
	fi := t.fdOf(p, fd)
	if fi.dup < 0 {
		fi.dup = t.dupFd(p, fd)
	}
	if fi.dup < 0 {
		return
	}
	po.probe = append(po.probe, unix.PollFd{Fd: int32(fi.dup), Events: ev})
}

func ready(fds []unix.PollFd) bool {
	if len(fds) == 0 {
		return false
	}
	for i := range fds {
		fds[i].Revents = 0
	}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func readyFd(fd int, ev int16) bool {
	if fd < 0 {
		return false
	}
	return ready([]unix.PollFd{{Fd: int32(fd), Events: ev}})
}

// enabled says whether releasing p now would not block.
func (t *Tracer) enabled(p *pendingOp) bool {
	if t.interruptedByTimer(p) {
		return true
	}
	switch p.op.Kind {
	case sched.Deliver:
		if p.chunk.dg != nil {
			return true // datagrams keep no order
		}
		c := p.chunk.conn
		if len(c.queue) == 0 || c.queue[0] != p {
			return false
		}
		if c.blocked && !readyFd(c.dup, unix.POLLOUT) {
			return false
		}
		return t.roomFor(c, len(p.chunk.data))
	case sched.Connect:
		return p.deadline < 0 || p.deadline <= t.now()
	case sched.Close, sched.Shutdown:
		return true
	case sched.Accept, sched.Recv:
		if p.immediate {
			return true
		}
		if p.deadline >= 0 && p.deadline <= t.now() {
			return true // SO_RCVTIMEO expired
		}
		return p.fi != nil && readyFd(p.fi.dup, unix.POLLIN)
	case sched.Send:
		if c := t.conns[p.fi.outKey()]; c != nil && c.queued >= t.opts.DeliverCap {
			return false
		}
		return true
	case sched.Poll:
		if p.immediate || ready(p.probe) {
			return true
		}
		return p.deadline >= 0 && p.deadline <= t.now()
	case sched.Sleep:
		return p.deadline <= t.now()
	}
	return true
}

// release lets one pending op proceed.
func (t *Tracer) release(id uint64) (Released, error) {
	p := t.pending[id]
	if p == nil {
		return Released{}, errUnknownOp(id)
	}
	delete(t.pending, id)
	if p.op.Kind == sched.Deliver {
		if p.chunk.dg != nil {
			return t.deliverDgram(p)
		}
		return t.deliver(p)
	}
	th := p.th
	th.pending = nil
	th.lastOp = id
	r := Released{Causes: p.causes}
	switch p.op.Kind {
	case sched.Sleep:
		t.releaseSleep(p)
	case sched.Poll:
		if !p.immediate && !ready(p.probe) && p.deadline >= 0 && p.deadline <= t.now() {
			t.timeoutPoll(th, p)
			return r, nil
		}
		t.cont(th, 0)
	case sched.Send:
		// A socket that was reset or fully shut down fails the send in the
		// kernel (ECONNRESET, EPIPE): let it, rather than capture bytes no
		// one can receive.
		if t.opts.Capture && p.fi.sockType == unix.SOCK_DGRAM {
			n, err := t.captureDgram(p)
			if err == nil {
				r.Result = n
				t.fake(th, n)
				return r, nil
			}
			t.log.Warn("capturing datagram, sending it natively", "op", p.op.String(), "err", err)
		}
		if t.opts.Capture && p.fi.sockType == unix.SOCK_STREAM && p.nr != unix.SYS_SENDMMSG && !readyFd(p.fi.dup, unix.POLLERR|unix.POLLHUP) {
			n, err := t.capture(p)
			if err == nil {
				r.Result = n
				t.fake(th, n)
				return r, nil
			}
			t.log.Warn("capturing send, running it natively", "op", p.op.String(), "err", err)
		}
		t.cont(th, 0)
	case sched.Recv:
		if t.timedOut(p) {
			t.fake(th, -int64(unix.EAGAIN))
			r.Result = -int64(unix.EAGAIN)
			return r, nil
		}
		if t.nothingToRead(p) {
			// A non-blocking read released with nothing queued and no FIN:
			// it returns EAGAIN and moves no bytes (the kernel records none).
			r.Result = -int64(unix.EAGAIN)
		} else {
			r.Causes = append(r.Causes, t.consume(p)...)
		}
		t.cont(th, 0)
	case sched.Accept:
		if t.timedOut(p) {
			t.fake(th, -int64(unix.EAGAIN))
			return r, nil
		}
		if c := t.popConnect(p.op.Object); c != 0 {
			r.Causes = append(r.Causes, c)
		}
		t.cont(th, 0)
	case sched.Connect:
		if p.silent {
			t.fake(th, -int64(unix.EHOSTUNREACH))
			r.Result = -int64(unix.EHOSTUNREACH)
			return r, nil
		}
		t.connects[p.op.Object] = append(t.connects[p.op.Object], id)
		if p.fi != nil && p.fi.dup >= 0 {
			peer, _ := netip.ParseAddrPort(p.op.Peer)
			th.connecting = &connectWait{fi: p.fi, peer: peer, since: time.Now()}
		}
		t.cont(th, 0)
	case sched.Close:
		fi := t.forgetFd(th.proc, p.fd)
		t.releaseDup(fi)
		if fi != nil {
			t.expectFin(fi.local, fi.peer)
		}
		t.cont(th, 0)
	case sched.Shutdown:
		how := int(p.args[1])
		if c := t.conns[p.fi.outKey()]; c != nil && len(c.queue) > 0 && how != unix.SHUT_RD {
			// The FIN must follow the queued data: shut down our duplicate
			// once drained and let the tracee's call succeed now.
			c.shutWr = true
			t.fake(th, 0)
			return r, nil
		}
		t.cont(th, 0)
	default:
		t.cont(th, 0)
	}
	return r, nil
}

// silentConnect is how long, in virtual time, a blocking connect to an
// address on the subnet that no node has takes to fail with EHOSTUNREACH:
// Linux gives up after three unanswered ARP probes a second apart. Left to
// the kernel it would take that long in real time, beyond any schedule.
// A non-blocking one fails at once, as it does once the kernel's neighbour
// entry has failed.
const silentConnect = 3 * time.Second

// connectWaitLimit bounds how long lockstep waits, in real time, for a
// handshake between two nodes; past it (a partition, a dead peer) the
// connect is left to the kernel's timing.
const connectWaitLimit = 200 * time.Millisecond

// finishConnect runs when a thread that connected stops again. A
// non-blocking connect returns before the handshake ends, and even a
// blocking one returns before the peer has processed the last ACK: wait
// until the connection exists on both ends, so that whether the peer's
// accept (or the caller's poll for writability) is enabled does not depend
// on timing.
func (t *Tracer) finishConnect(th *thread) {
	cw := th.connecting
	th.connecting = nil
	fds := []unix.PollFd{{Fd: int32(cw.fi.dup), Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, int(connectWaitLimit.Milliseconds())); err != nil || n == 0 || fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
		return // refused, reset or still pending: nothing to wait for
	}
	sa, err := unix.Getsockname(cw.fi.dup)
	if err != nil {
		return
	}
	s4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return
	}
	local := netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), uint16(s4.Port))
	ni := t.byAddr[cw.peer.Addr().Unmap()]
	if ni == nil {
		return
	}
	d, err := t.diagFor(ni)
	if err != nil {
		return
	}
	for i := 0; i < arrivalPolls; i++ {
		if _, err := d.RQueue(cw.peer, local); err == nil {
			return
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10000}, nil)
	}
}

// sockTimeout gives a blocking recv or accept the virtual deadline of its
// socket's SO_RCVTIMEO, read from lockstep's duplicate of the socket
// (options belong to the socket, not the descriptor).
func (t *Tracer) sockTimeout(po *pendingOp, opt int) {
	if po.immediate || t.opts.Clock == nil || po.fi == nil || po.fi.dup < 0 {
		return
	}
	tv, err := unix.GetsockoptTimeval(po.fi.dup, unix.SOL_SOCKET, opt)
	if err != nil || (tv.Sec == 0 && tv.Usec == 0) {
		return
	}
	po.deadline = t.now() + tv.Sec*1e9 + tv.Usec*1e3
}

// timedOut says whether a recv or accept is released because its socket
// timeout passed with nothing to read: the kernel would return EAGAIN.
func (t *Tracer) timedOut(p *pendingOp) bool {
	return !p.immediate && p.deadline >= 0 && p.deadline <= t.now() &&
		(p.fi == nil || !readyFd(p.fi.dup, unix.POLLIN))
}

// timeoutPoll makes a poll-family call return "timed out" without waiting.
func (t *Tracer) timeoutPoll(th *thread, p *pendingOp) {
	a := p.args
	switch p.nr {
	case unix.SYS_POLL, unix.SYS_PPOLL:
		n := int(a[1])
		if n > 0 && n <= 4096 {
			buf := make([]byte, 8*n)
			if ptrace.ReadMem(th.tid, a[0], buf) == nil {
				for i := 0; i < n; i++ {
					buf[8*i+6], buf[8*i+7] = 0, 0
				}
				ptrace.WriteMem(th.tid, a[0], buf)
			}
		}
	case unix.SYS_SELECT, unix.SYS_PSELECT6:
		nfds := int(a[0])
		for _, addr := range []uint64{a[1], a[2], a[3]} {
			if addr != 0 && nfds > 0 && nfds <= 1024 {
				ptrace.WriteMem(th.tid, addr, make([]byte, (nfds+63)/64*8))
			}
		}
		if p.nr == unix.SYS_SELECT && a[4] != 0 {
			ptrace.WriteMem(th.tid, a[4], make([]byte, 16)) // Linux updates the timeout
		}
	}
	t.fake(th, 0)
}

type errUnknownOp uint64

func (e errUnknownOp) Error() string {
	return "releasing op #" + strconv.FormatUint(uint64(e), 10) + ": no such pending op"
}

// nothingToRead reports whether a stream socket's recv, about to run, will
// find neither bytes nor end of stream.
func (t *Tracer) nothingToRead(p *pendingOp) bool {
	if p.fi == nil || p.fi.dup < 0 || p.fi.sockType != unix.SOCK_STREAM {
		return false
	}
	if avail, err := unix.IoctlGetInt(p.fi.dup, unix.SIOCINQ); err != nil || avail > 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(p.fi.dup), Events: unix.POLLIN | unix.POLLRDHUP}}
	n, err := unix.Poll(fds, 0)
	return err == nil && (n == 0 || fds[0].Revents&(unix.POLLIN|unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) == 0)
}
