package tracer

import (
	"encoding/binary"
	"io"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// A gate is what the tracer does at the seccomp stop of one syscall.
type gate struct {
	name string
	// clock says the gate needs virtual time: without a clock the syscall
	// runs natively.
	clock bool
	// argRule: the filter stops it only for some arguments, by a rule of
	// its own (launch.Filter), not with the unconditional ones.
	argRule bool
	// handle answers the stop, releases it or makes it a pending op, and
	// reports true; false lets the syscall run natively.
	handle func(th *thread, nr int, a [6]uint64) bool
}

// gateTable returns the syscalls that stop under the tracer; every other syscall
// runs natively. To gate another one, add its entry here with its handler:
// the seccomp filter is built from this table, and whether a pending op is
// enabled and how it is released go by the op's kind (the kind table,
// kinds.go).
//
// read, write and close stop too because a filter cannot tell a socket from
// a file: their handlers release non-socket ones at once from a per-fd
// cache. Gates with argRule stop only for the arguments the filter's own
// rule for them names (futex: waits with a timeout).
//
// The handlers are bound to the parts of t that own what they change.
func gateTable(t *Tracer) map[int]gate {
	return map[int]gate{
		unix.SYS_READ:            {name: "read", handle: t.sk.onRecv},
		unix.SYS_READV:           {name: "readv", handle: t.sk.onRecv},
		unix.SYS_RECVFROM:        {name: "recvfrom", handle: t.sk.onRecv},
		unix.SYS_RECVMSG:         {name: "recvmsg", handle: t.sk.onRecv},
		unix.SYS_RECVMMSG:        {name: "recvmmsg", handle: t.sk.onRecv},
		unix.SYS_WRITE:           {name: "write", handle: t.sk.onSend},
		unix.SYS_WRITEV:          {name: "writev", handle: t.sk.onSend},
		unix.SYS_SENDTO:          {name: "sendto", handle: t.sk.onSend},
		unix.SYS_SENDMSG:         {name: "sendmsg", handle: t.sk.onSend},
		unix.SYS_SENDMMSG:        {name: "sendmmsg", handle: t.sk.onSend},
		unix.SYS_CLOSE:           {name: "close", handle: t.sk.onClose},
		unix.SYS_SHUTDOWN:        {name: "shutdown", handle: t.sk.onShutdown},
		unix.SYS_CONNECT:         {name: "connect", handle: t.sk.onConnect},
		unix.SYS_ACCEPT:          {name: "accept", handle: t.sk.onAccept},
		unix.SYS_ACCEPT4:         {name: "accept4", handle: t.sk.onAccept},
		unix.SYS_POLL:            {name: "poll", handle: t.sk.onPoll},
		unix.SYS_PPOLL:           {name: "ppoll", handle: t.sk.onPoll},
		unix.SYS_SELECT:          {name: "select", handle: t.sk.onPoll},
		unix.SYS_PSELECT6:        {name: "pselect6", handle: t.sk.onPoll},
		unix.SYS_EPOLL_WAIT:      {name: "epoll_wait", handle: t.sk.onPoll},
		unix.SYS_EPOLL_PWAIT:     {name: "epoll_pwait", handle: t.sk.onPoll},
		unix.SYS_EPOLL_PWAIT2:    {name: "epoll_pwait2", handle: t.sk.onPoll},
		unix.SYS_NANOSLEEP:       {name: "nanosleep", clock: true, handle: t.vt.onSleep},
		unix.SYS_CLOCK_NANOSLEEP: {name: "clock_nanosleep", clock: true, handle: t.vt.onSleep},
		unix.SYS_FUTEX:           {name: "futex", clock: true, argRule: true, handle: t.vt.onFutex},
		// Other timed waits (waits.go's timedWaits), untimed ones run as
		// they are.
		unix.SYS_RT_SIGTIMEDWAIT: {name: "rt_sigtimedwait", clock: true, handle: t.vt.onTimedWait},
		unix.SYS_SEMTIMEDOP:      {name: "semtimedop", clock: true, handle: t.vt.onTimedWait},
		unix.SYS_MQ_TIMEDRECEIVE: {name: "mq_timedreceive", clock: true, handle: t.vt.onTimedWait},
		unix.SYS_MQ_TIMEDSEND:    {name: "mq_timedsend", clock: true, handle: t.vt.onTimedWait},
		unix.SYS_FUTEX_WAITV:     {name: "futex_waitv", clock: true, handle: t.vt.onTimedWait},
		unix.SYS_CLOCK_GETTIME:   {name: "clock_gettime", clock: true, handle: t.vt.onClockGettime},
		unix.SYS_GETTIMEOFDAY:    {name: "gettimeofday", clock: true, handle: t.vt.onGettimeofday},
		unix.SYS_TIME:            {name: "time", clock: true, handle: t.vt.onTime},
		unix.SYS_GETRANDOM:       {name: "getrandom", handle: (*thread).onGetrandom},
		// Virtual kernel timers (timers.go). timerfd_create is not gated: a
		// timerfd's clock is read from /proc/PID/fdinfo when it is first armed.
		unix.SYS_TIMERFD_SETTIME:  {name: "timerfd_settime", clock: true, handle: timerGate(t.vt.onTimerfdSettime)},
		unix.SYS_TIMERFD_GETTIME:  {name: "timerfd_gettime", clock: true, handle: timerGate(t.vt.onTimerfdGettime)},
		unix.SYS_ALARM:            {name: "alarm", clock: true, handle: timerGate(t.vt.onAlarm)},
		unix.SYS_SETITIMER:        {name: "setitimer", clock: true, handle: timerGate(t.vt.onSetitimer)},
		unix.SYS_GETITIMER:        {name: "getitimer", clock: true, handle: timerGate(t.vt.onGetitimer)},
		unix.SYS_TIMER_CREATE:     {name: "timer_create", clock: true, handle: timerGate(t.vt.onTimerCreate)},
		unix.SYS_TIMER_SETTIME:    {name: "timer_settime", clock: true, handle: timerGate(t.vt.onTimerSettime)},
		unix.SYS_TIMER_GETTIME:    {name: "timer_gettime", clock: true, handle: timerGate(t.vt.onTimerGettime)},
		unix.SYS_TIMER_GETOVERRUN: {name: "timer_getoverrun", clock: true, handle: timerGate(t.vt.onTimerGetoverrun)},
		unix.SYS_TIMER_DELETE:     {name: "timer_delete", clock: true, handle: timerGate(t.vt.onTimerDelete)},
		// Syscalls that may sleep on the disk run while nothing else does.
		unix.SYS_FSYNC:           {name: "fsync", handle: t.q.onDiskSync},
		unix.SYS_FDATASYNC:       {name: "fdatasync", handle: t.q.onDiskSync},
		unix.SYS_SYNC_FILE_RANGE: {name: "sync_file_range", handle: t.q.onDiskSync},
		unix.SYS_SYNCFS:          {name: "syncfs", handle: t.q.onDiskSync},
		unix.SYS_SYNC:            {name: "sync", handle: t.q.onDiskSync},
		unix.SYS_MSYNC:           {name: "msync", handle: t.q.onAlone},
		unix.SYS_FALLOCATE:       {name: "fallocate", handle: t.q.onAlone},
		unix.SYS_FTRUNCATE:       {name: "ftruncate", handle: t.q.onAlone},
		unix.SYS_TRUNCATE:        {name: "truncate", handle: t.q.onAlone},
		unix.SYS_RENAME:          {name: "rename", handle: t.q.onAlone},
		unix.SYS_RENAMEAT:        {name: "renameat", handle: t.q.onAlone},
		unix.SYS_RENAMEAT2:       {name: "renameat2", handle: t.q.onAlone},
		// Ways around the gate, refused on sockets (bypass.go).
		unix.SYS_SPLICE:   {name: "splice", handle: t.sk.onSocketSplice},
		unix.SYS_SENDFILE: {name: "sendfile", handle: t.sk.onSocketSplice},
		unix.SYS_PREADV2:  {name: "preadv2", handle: t.sk.onVectorIO},
		unix.SYS_PWRITEV2: {name: "pwritev2", handle: t.sk.onVectorIO},
		// Changes to the fd table that would make the fd kind cache stale.
		unix.SYS_DUP2:        {name: "dup2", handle: t.sk.onDup},
		unix.SYS_DUP3:        {name: "dup3", handle: t.sk.onDup},
		unix.SYS_CLOSE_RANGE: {name: "close_range", handle: t.sk.onCloseRange},
		// Changes to what sockOpts caches; the filter stops these three
		// only for F_SETFL, FIONBIO, SO_RCVTIMEO and SO_RCVLOWAT.
		unix.SYS_FCNTL:      {name: "fcntl", argRule: true, handle: t.pt.onSockOptsChange},
		unix.SYS_IOCTL:      {name: "ioctl", argRule: true, handle: t.pt.onSockOptsChange},
		unix.SYS_SETSOCKOPT: {name: "setsockopt", argRule: true, handle: t.pt.onSockOptsChange},
	}
}

// timerGate adapts a timer handler, which needs no syscall number.
func timerGate(h func(th *thread, a [6]uint64) bool) func(*thread, int, [6]uint64) bool {
	return func(th *thread, _ int, a [6]uint64) bool { return h(th, a) }
}

// filteredSyscalls lists the gates the seccomp filter stops unconditionally,
// in ascending order.
func filteredSyscalls(gates map[int]gate) []uint32 {
	var nrs []uint32
	for nr, g := range gates {
		if !g.argRule {
			nrs = append(nrs, uint32(nr))
		}
	}
	slices.Sort(nrs)
	return nrs
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
	nr := th.regs.Syscall()
	if th.proc.node.disk != nil && t.dk.onDisk(th, nr, th.regs.Args()) {
		return
	}
	if g, ok := t.gates[nr]; ok && (t.opts.Clock != nil || !g.clock) && g.handle(th, nr, th.regs.Args()) {
		return
	}
	th.allow()
}

// onGetrandom fills the buffer from the process's seeded stream.
func (th *thread) onGetrandom(_ int, a [6]uint64) bool {
	if th.proc.rand == nil {
		return false
	}
	th.fakeRandom(a[0], a[1])
	return true
}

// onRecv makes a receive from another node's connection (or a datagram
// socket) an op; a read of the random device is answered from the seed.
func (sk *sockets) onRecv(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := p.fdOf(fd)
	if fi.kind == fdRandom && nr == unix.SYS_READ && p.rand != nil {
		th.fakeRandom(a[1], a[2])
		return true
	}
	if fi.kind != fdInet || !sk.net.sockGated(th, fi, nr, a) {
		return false
	}
	po := sk.ops.newPending(th, sched.Recv, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Object = p.node.inbox()
	po.op.Peer = fi.peerString()
	po.op.Conn = fi.inKey()
	po.op.Bytes = int(a[2])
	po.immediate = sk.pt.nonblocking(fi, nr, a)
	sk.vt.sockTimeout(po)
	sk.vt.takeMmsgTimeout(po)
	if nr == unix.SYS_RECVMSG || nr == unix.SYS_READV {
		po.op.Bytes = 0
	}
	return true
}

// onSend makes a send on another node's connection (or a datagram socket)
// an op.
func (sk *sockets) onSend(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := p.fdOf(fd)
	if fi.kind == fdUnix && nr != unix.SYS_WRITE && nr != unix.SYS_WRITEV {
		return sk.onUnixSend(th, nr, a)
	}
	if fi.kind != fdInet || !sk.net.sockGated(th, fi, nr, a) {
		return false
	}
	po := sk.ops.newPending(th, sched.Send, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = fi.peerString()
	po.op.Conn = fi.outKey()
	if fi.sockType == unix.SOCK_DGRAM {
		d := th.dgramDest(fi, nr, a)
		po.op.Peer, po.op.Conn = d.String(), p.dgramSource(fi).String()+">"+d.String()
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
func (sk *sockets) onClose(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := p.fds[fd]
	if fi != nil && fi.kind == fdInet && (fi.listening || (fi.peer.IsValid() && sk.pt.gated(fi.peer.Addr()))) {
		po := sk.ops.newPending(th, sched.Close, nr, a)
		po.fd, po.fi = fd, fi
		po.op.Peer = addrString(fi.peer)
		po.op.Conn = fi.outKey()
		return true
	}
	sk.net.releaseDup(p.forgetFd(fd))
	return false
}

// onShutdown makes shutting down a connection to another node an op.
func (sk *sockets) onShutdown(th *thread, nr int, a [6]uint64) bool {
	fd := int(a[0])
	fi := th.proc.fdOf(fd)
	if fi.kind != fdInet || !fi.peer.IsValid() || !sk.pt.gated(fi.peer.Addr()) {
		return false
	}
	po := sk.ops.newPending(th, sched.Shutdown, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = addrString(fi.peer)
	po.op.Conn = fi.outKey()
	return true
}

// onDup forgets what the target descriptor of dup2/dup3 was.
func (sk *sockets) onDup(th *thread, _ int, a [6]uint64) bool {
	if int(a[1]) != int(a[0]) {
		sk.net.releaseDup(th.proc.forgetFd(int(a[1])))
	}
	return false
}

// onCloseRange forgets the descriptors close_range closes.
func (sk *sockets) onCloseRange(th *thread, _ int, a [6]uint64) bool {
	p := th.proc
	for fd := range p.fds {
		if uint64(fd) >= a[0] && uint64(fd) <= a[1] {
			sk.net.releaseDup(p.forgetFd(fd))
		}
	}
	return false
}

// onConnect makes a connect to another node (or to an address on the
// subnet that no node has) an op.
func (sk *sockets) onConnect(th *thread, nr int, a [6]uint64) bool {
	fam, ap := decodeSockaddr(th.tid, a[1], a[2])
	if fam == unix.AF_UNIX {
		return sk.onUnixConnect(th, nr, a[1], a[2])
	}
	if (fam != unix.AF_INET && fam != unix.AF_INET6) || !sk.pt.gated(ap.Addr()) {
		return false
	}
	fd := int(a[0])
	fi := th.proc.fdOf(fd)
	po := sk.ops.newPending(th, sched.Connect, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = ap.String()
	po.op.Object = "listen:" + ap.String()
	po.immediate = sk.pt.sockOptsOf(fi).nonblock
	po.op.NonBlocking = po.immediate
	if sk.opts.Host != nil && !sk.opts.Host(ap.Addr().Unmap()) {
		po.silent = true
		if !po.immediate && sk.opts.Clock != nil {
			po.deadline = sk.vt.now() + int64(silentConnect)
		}
	}
	return true
}

// onAccept makes an accept on an internet socket an op.
func (sk *sockets) onAccept(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := p.fdOf(fd)
	if fi.kind != fdInet {
		return false
	}
	po := sk.ops.newPending(th, sched.Accept, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Object = "listen:" + p.listenKey(fi)
	po.immediate = sk.pt.sockOptsOf(fi).nonblock
	sk.vt.sockTimeout(po)
	return true
}

func (th *thread) fakeRandom(buf, count uint64) {
	n := count
	if n > 1<<20 {
		n = 1 << 20
	}
	b := make([]byte, n)
	io.ReadFull(th.proc.rand, b)
	if err := ptrace.WriteMem(th.tid, buf, b); err != nil {
		th.fake(-int64(unix.EFAULT))
		return
	}
	th.fake(int64(n))
}

func putTimespec(b []byte, ns int64) {
	binary.LittleEndian.PutUint64(b, uint64(ns/1e9))
	binary.LittleEndian.PutUint64(b[8:], uint64(ns%1e9))
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

// onPoll turns a poll-family call into an op with a probe set and deadline.
func (sk *sockets) onPoll(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	po := sk.ops.newPending(th, sched.Poll, nr, a)
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
				po.addProbe(fd, ev)
			}
		}
		if nr == unix.SYS_POLL {
			if ms := int32(a[2]); ms >= 0 {
				timeout = int64(ms) * 1e6
			}
		} else if a[2] != 0 {
			if ns, ok := readTimespec(th.tid, a[2]); ok {
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
					po.addProbe(fd, events[s])
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
			} else if ns, ok := readTimespec(th.tid, a[4]); ok {
				timeout = ns
			}
		}
	default: // epoll family: the epoll fd is readable when events are ready
		po.addProbe(int(a[0]), unix.POLLIN)
		if nr == unix.SYS_EPOLL_PWAIT2 {
			if a[3] != 0 {
				if ns, ok := readTimespec(th.tid, a[3]); ok {
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
	case timeout > 0 && sk.opts.Clock != nil:
		po.deadline = sk.vt.now() + timeout
	case timeout > 0:
		// Without virtual time a timeout is real; let it count as ready so
		// lockstep never blocks on it.
		po.immediate = true
	}
	return true
}
