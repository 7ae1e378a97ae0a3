package tracer

import (
	"context"
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
	// polled is the opTable.pollGen of the batched poll that answered
	// pollReady for this op (see pollPending).
	polled    uint64
	pollReady bool
	// byBooks: pollReady came from lockstep's books (known), not a poll.
	byBooks bool
	// mmsgEnd is the virtual time at which a recvmmsg's timeout ends;
	// mmsgTimed says it has one (releaseMmsgTimeout).
	mmsgEnd   int64
	mmsgTimed bool
}

func (ot *opTable) newPending(th *thread, kind sched.Kind, nr int, args [6]uint64) *pendingOp {
	ot.seq++
	p := &pendingOp{th: th, nr: nr, args: args, fd: -1, deadline: -1, seq: ot.seq}
	p.op = sched.Op{
		Node: th.proc.node.name, LPID: th.lpid, Kind: kind,
		Syscall: ot.syscallName(nr),
	}
	if th.comm == "" {
		th.readState(false) // once; quiescence's reads keep it current
	}
	p.op.Thread = th.comm
	t0 := time.Now()
	p.op.Site = ot.sites.Site(&th.proc.site, th.regs.SP(), th.regs.FP(), ot.opts.SiteFrames)
	ot.stats.SiteTime += time.Since(t0)
	if th.firstCause != 0 {
		p.causes = append(p.causes, th.firstCause)
		th.firstCause = 0
	}
	ot.pt.setState(th, tsGated)
	th.pending = p
	ot.fresh = append(ot.fresh, p)
	ot.stats.Ops++
	return p
}

func (ot *opTable) dropPending(p *pendingOp) {
	p.dropped = true
	if p.op.ID != 0 {
		delete(ot.pending, p.op.ID)
	}
	if p.th != nil && p.th.pending == p {
		p.th.pending = nil
	}
}

// allow resumes a stopped thread into its real syscall.
func (th *thread) allow() {
	th.tab.stats.Released++
	th.cont(0)
}

// fake skips the syscall and makes it return ret.
func (th *thread) fake(ret int64) {
	th.regs.Skip(ret)
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		// ESRCH: another thread's exit_group took this one down while it
		// sat in its stop; its exit event follows.
		lvl := slog.LevelWarn
		if err == unix.ESRCH {
			lvl = slog.LevelDebug
		}
		th.tab.log.Log(context.Background(), lvl, "faking syscall result", "thread", th.String(), "err", err)
	}
	th.cont(0)
}

func (pt *procTable) gated(a netip.Addr) bool { return pt.opts.Gated(a.Unmap()) }

func (pt *procTable) inbox(a netip.Addr) string {
	if n := pt.byAddr[a.Unmap()]; n != nil {
		return n.inbox()
	}
	return "inbox:" + a.String()
}

// inbox names the node's inbox object ("inbox:NAME").
func (ni *nodeInfo) inbox() string {
	if ni.inboxName == "" {
		ni.inboxName = "inbox:" + ni.name
	}
	return ni.inboxName
}

func addrString(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
}

// listenKey names a listener by the node's address even when it is bound to
// the wildcard address, so that connects and accepts agree.
func (p *process) listenKey(fi *fdInfo) string {
	a := fi.local.Addr()
	if a.IsUnspecified() && p.node.addr.IsValid() {
		a = p.node.addr
	}
	return netip.AddrPortFrom(a, fi.local.Port()).String()
}

// sockGated says whether a socket call talks to another node.
func (nw *network) sockGated(th *thread, fi *fdInfo, nr int, a [6]uint64) bool {
	if fi.sockType == unix.SOCK_DGRAM {
		return nr != unix.SYS_SENDMMSG && nw.dgramGated(th, fi, nr, a)
	}
	if fi.peer.IsValid() {
		return nw.pt.gated(fi.peer.Addr())
	}
	return false
}

// sockOpts is what lockstep last read of a socket's blocking mode,
// receive timeout and low-water mark, through its duplicate (which shares
// the tracee's file description and socket): read at every recv they cost
// a syscall each. It holds while gen is the tracer's sockOptsGen, which
// every call that can change them moves on (onSockOptsChange).
type sockOpts struct {
	gen      uint64
	nonblock bool
	rcvTimeo int64 // ns; 0: none
	// rcvLowat is SO_RCVLOWAT, read only for the books (see known): the
	// bytes a recv waits for.
	rcvLowat int
}

// sockOptsOf returns fi's blocking mode, receive timeout and low-water
// mark.
func (pt *procTable) sockOptsOf(fi *fdInfo) sockOpts {
	if fi.dup < 0 {
		return sockOpts{}
	}
	if fi.opts.gen == pt.sockOptsGen && pt.changingSockOpts == 0 {
		return fi.opts
	}
	o := sockOpts{gen: pt.sockOptsGen}
	if fl, err := unix.FcntlInt(uintptr(fi.dup), unix.F_GETFL, 0); err == nil {
		o.nonblock = fl&unix.O_NONBLOCK != 0
	}
	if tv, err := unix.GetsockoptTimeval(fi.dup, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
		o.rcvTimeo = tv.Sec*1e9 + tv.Usec*1e3
	}
	o.rcvLowat = 1
	if pt.opts.Capture && fi.sockType == unix.SOCK_STREAM {
		if n, err := unix.GetsockoptInt(fi.dup, unix.SOL_SOCKET, unix.SO_RCVLOWAT); err == nil {
			o.rcvLowat = n
		}
	}
	if pt.changingSockOpts == 0 {
		// While a change is under way (stopped at, or resumed into, and
		// not yet seen again) what was read may be from before it.
		fi.opts = o
	}
	return o
}

// onSockOptsChange: a tracee is about to run fcntl(F_SETFL), ioctl(FIONBIO)
// or setsockopt(SO_RCVTIMEO or SO_RCVLOWAT), which the filter stops for
// this alone. What lockstep read of any socket's (the fd may share a
// description with others) no longer holds, nor does what it reads until
// the thread is seen again, the call done (handle).
func (pt *procTable) onSockOptsChange(th *thread, _ int, _ [6]uint64) bool {
	pt.sockOptsGen++
	if !th.changingSockOpts {
		th.changingSockOpts = true
		pt.changingSockOpts++
	}
	return false
}

// sockOptsChanged ends th's change of socket settings (it stopped again,
// or is gone).
func (pt *procTable) sockOptsChanged(th *thread) {
	if th.changingSockOpts {
		th.changingSockOpts = false
		pt.changingSockOpts--
		pt.sockOptsGen++
	}
}

func (pt *procTable) nonblocking(fi *fdInfo, nr int, a [6]uint64) bool {
	if pt.sockOptsOf(fi).nonblock {
		return true
	}
	switch nr {
	case unix.SYS_RECVFROM:
		return a[3]&unix.MSG_DONTWAIT != 0
	case unix.SYS_RECVMSG:
		return a[2]&unix.MSG_DONTWAIT != 0
	case unix.SYS_RECVMMSG:
		return a[3]&unix.MSG_DONTWAIT != 0
	}
	return false
}

func (po *pendingOp) addProbe(fd int, ev int16) {
	if fd < 0 {
		return
	}
	p := po.th.proc
	fi := p.fdOf(fd)
	if fi.dup < 0 {
		fi.dup = p.dupFd(fd)
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

// pollPending asks the kernel, in one ppoll, for the readiness of every
// op in ops that depends on one: one syscall per state instead of one per
// op, each a microsecond or two. The answers hold until pollGen moves: for
// enabled in this state, and for the release that follows it when nothing
// else was done in between (no tracee runs meanwhile).
func (ot *opTable) pollPending(ops []*pendingOp) {
	ot.pollGen++
	fds, spans := ot.pollFds[:0], ot.pollSpans[:0]
	for _, p := range ops {
		k := ot.kinds[p.op.Kind]
		if k.books != nil {
			if r, ok := k.books(p); ok && !ot.noBooks {
				p.polled, p.pollReady, p.byBooks = ot.pollGen, r, true
				continue
			}
		}
		p.byBooks = false
		if k.polls == nil {
			continue
		}
		start := len(fds)
		if fds = k.polls(fds, p); len(fds) > start {
			spans = append(spans, pollSpan{p: p, start: start, end: len(fds)})
		}
	}
	ot.pollFds, ot.pollSpans = fds, spans
	if len(fds) == 0 {
		return
	}
	n, err := unix.Poll(fds, 0)
	for _, s := range spans {
		ok := false
		if err == nil && n > 0 {
			for _, f := range fds[s.start:s.end] {
				ok = ok || f.Revents != 0
			}
		}
		s.p.polled, s.p.pollReady = ot.pollGen, ok
		if k := ot.kinds[s.p.op.Kind]; err == nil && !ok && k.notePolled != nil {
			k.notePolled(s.p)
		}
	}
	clear(spans) // drop the references to the ops
}

// knownRecv and knownSend (known, for short) answer a blocking recv's or a captured send's readiness on a
// stream connection from lockstep's books, without a poll, where they
// suffice: bytes to read are the ones lockstep delivered and the peer
// acknowledged (unread); an end of stream or an error (and, for a send,
// a hang-up) can come only from something that moves netGen (a close, a
// shutdown, a crash, a reset, a process's end, a native send, any
// release but a recv's, a poll's, a sleep's, a stream delivery's or a
// captured send's), so a socket a poll found without them stays so
// while netGen does not move (calm). Where the kernel's timing decides (a
// delivery not acknowledged, a FIN waited for in vain) and after a step
// that released nothing (Run), polls answer.
func (nw *network) knownRecv(p *pendingOp) (ready, ok bool) {
	fi := p.fi
	if !nw.keepsBooks(fi) || p.immediate {
		return false, false // an immediate one polls nothing
	}
	if n, ok := nw.unread(p); ok && n > 0 {
		if n < nw.pt.sockOptsOf(fi).rcvLowat {
			return false, false // poll says when, as it did before
		}
		return true, true
	}
	key := fi.inKey()
	if fi.calmRecv != nw.netGen || nw.nativeSends[key] || nw.lateFins[key] {
		return false, false
	}
	if c := nw.conns[key]; c != nil && (!c.acked || c.sent != c.consumed) {
		return false, false
	}
	return false, true
}

func (nw *network) knownSend(p *pendingOp) (ready, ok bool) {
	fi := p.fi
	if !nw.keepsBooks(fi) {
		return false, false
	}
	if c := nw.conns[fi.outKey()]; c != nil && !c.acked {
		// Its last delivery was not acknowledged: a reset may be on
		// its way back, when is the kernel's to say.
		return false, false
	}
	return false, fi.calmRecv == nw.netGen || fi.calmSend == nw.netGen
}

// keepsBooks says whether lockstep's books can answer for a socket: a
// captured stream socket it holds a duplicate of.
func (nw *network) keepsBooks(fi *fdInfo) bool {
	return fi != nil && fi.dup >= 0 && fi.sockType == unix.SOCK_STREAM && nw.opts.Capture
}

// calmRecv and calmSend record that a poll found p's stream socket
// without bytes, an end or an error (POLLIN), or without an error or a
// hang-up (POLLERR|POLLHUP), for known.
func (nw *network) calmRecv(p *pendingOp) {
	if fi := p.fi; fi != nil && fi.sockType == unix.SOCK_STREAM && !p.immediate {
		fi.calmRecv = nw.netGen
	}
}

func (nw *network) calmSend(p *pendingOp) {
	if fi := p.fi; fi != nil && fi.sockType == unix.SOCK_STREAM {
		fi.calmSend = nw.netGen
	}
}

type pollSpan struct {
	p          *pendingOp
	start, end int
}

// batched returns this state's batched answer for p, if it has one.
func (ot *opTable) batched(p *pendingOp) (ready, ok bool) {
	return p.pollReady, p.polled != 0 && p.polled == ot.pollGen
}

// readyOp says whether p's descriptor fd is ready for ev: this state's
// batched answer when there is one, else a poll of its own.
func (ot *opTable) readyOp(p *pendingOp, fd int, ev int16) bool {
	if r, ok := ot.batched(p); ok {
		return r
	}
	return readyFd(fd, ev)
}

// readyProbe is readyOp for a poll-family op's descriptors.
func (ot *opTable) readyProbe(p *pendingOp) bool {
	if r, ok := ot.batched(p); ok {
		return r
	}
	return ready(p.probe)
}

// silentConnect is how long, in virtual time, a blocking connect to an
// address on the subnet that no node has takes to fail with EHOSTUNREACH:
// Linux gives up after three unanswered ARP probes a second apart. Left to
// the kernel it would take that long in real time, beyond any schedule.
// A non-blocking one fails at once, as it does once the kernel's neighbour
// entry has failed.
const silentConnect = 3 * time.Second

// connectWaitLimit is how long lockstep waits, in real time, for a
// handshake between two nodes before it asks whether the SYN was lost
// (handshaking); past it, a lost one (a full backlog, a dead peer) leaves
// the connect to the kernel's timing.
const connectWaitLimit = 200 * time.Millisecond

// finishConnect runs when a thread that connected stops again. A
// non-blocking connect returns before the handshake ends, and even a
// blocking one returns before the peer has processed the last ACK: wait
// until the connection exists on both ends, so that whether the peer's
// accept (or the caller's poll for writability) is enabled does not depend
// on timing.
func (nw *network) finishConnect(th *thread) {
	cw := th.connecting
	th.connecting = nil
	fds := []unix.PollFd{{Fd: int32(cw.fi.dup), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(fds, int(connectWaitLimit.Milliseconds()))
		if err == unix.EINTR || err == nil && n == 0 && handshaking(cw) {
			continue
		}
		if err != nil || n == 0 || fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return // refused, reset or still pending: nothing to wait for
		}
		break
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
	ni := nw.pt.byAddr[cw.peer.Addr().Unmap()]
	if ni == nil {
		return
	}
	d, err := ni.diagFor()
	if err != nil {
		return
	}
	for w := (inFlight{}); ; {
		if _, err := d.RQueue(cw.peer, local); err == nil || !w.again() {
			return
		}
	}
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

// timeoutPoll makes a poll-family call return "timed out" without waiting.
func (th *thread) timeoutPoll(p *pendingOp) {
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
	th.fake(0)
}

type errUnknownOp uint64

func (e errUnknownOp) Error() string {
	return "releasing op #" + strconv.FormatUint(uint64(e), 10) + ": no such pending op"
}

// queued returns the bytes waiting in the stream socket a recv reads
// from, -1 when that is not known (not a stream socket lockstep holds a
// duplicate of, or the ioctl failed).
func (p *pendingOp) queued() int {
	if p.fi == nil || p.fi.dup < 0 || p.fi.sockType != unix.SOCK_STREAM {
		return -1
	}
	avail, err := unix.IoctlGetInt(p.fi.dup, unix.SIOCINQ)
	if err != nil {
		return -1
	}
	return avail
}

// nothingToRead reports whether a stream socket's recv, about to run, will
// find neither bytes nor end of stream; avail is what queued returned.
func (p *pendingOp) nothingToRead(avail int) bool {
	if avail != 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(p.fi.dup), Events: unix.POLLIN | unix.POLLRDHUP}}
	n, err := unix.Poll(fds, 0)
	return err == nil && (n == 0 || fds[0].Revents&(unix.POLLIN|unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) == 0)
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
