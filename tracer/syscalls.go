package tracer

import (
	"encoding/binary"
	"io"
	"slices"
	"strconv"

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
	handle func(t *Tracer, th *thread, nr int, a [6]uint64) bool
}

// gateTable returns the syscalls that stop under the tracer; every other syscall
// runs natively. To gate another one, add its entry here with its handler:
// the seccomp filter is built from this table, and whether a pending op is
// enabled and how it is released go by the op's kind (enabled, release).
//
// read, write and close stop too because a filter cannot tell a socket from
// a file: their handlers release non-socket ones at once from a per-fd
// cache. Gates with argRule stop only for the arguments the filter's own
// rule for them names (futex: waits with a timeout).
//
// A function, not a package variable, because the handlers name syscalls
// through the table (an initialization cycle otherwise).
func gateTable() map[int]gate {
	return map[int]gate{
		unix.SYS_READ:            {name: "read", handle: (*Tracer).onRecv},
		unix.SYS_READV:           {name: "readv", handle: (*Tracer).onRecv},
		unix.SYS_RECVFROM:        {name: "recvfrom", handle: (*Tracer).onRecv},
		unix.SYS_RECVMSG:         {name: "recvmsg", handle: (*Tracer).onRecv},
		unix.SYS_RECVMMSG:        {name: "recvmmsg", handle: (*Tracer).onRecv},
		unix.SYS_WRITE:           {name: "write", handle: (*Tracer).onSend},
		unix.SYS_WRITEV:          {name: "writev", handle: (*Tracer).onSend},
		unix.SYS_SENDTO:          {name: "sendto", handle: (*Tracer).onSend},
		unix.SYS_SENDMSG:         {name: "sendmsg", handle: (*Tracer).onSend},
		unix.SYS_SENDMMSG:        {name: "sendmmsg", handle: (*Tracer).onSend},
		unix.SYS_CLOSE:           {name: "close", handle: (*Tracer).onClose},
		unix.SYS_SHUTDOWN:        {name: "shutdown", handle: (*Tracer).onShutdown},
		unix.SYS_CONNECT:         {name: "connect", handle: (*Tracer).onConnect},
		unix.SYS_ACCEPT:          {name: "accept", handle: (*Tracer).onAccept},
		unix.SYS_ACCEPT4:         {name: "accept4", handle: (*Tracer).onAccept},
		unix.SYS_POLL:            {name: "poll", handle: (*Tracer).onPoll},
		unix.SYS_PPOLL:           {name: "ppoll", handle: (*Tracer).onPoll},
		unix.SYS_SELECT:          {name: "select", handle: (*Tracer).onPoll},
		unix.SYS_PSELECT6:        {name: "pselect6", handle: (*Tracer).onPoll},
		unix.SYS_EPOLL_WAIT:      {name: "epoll_wait", handle: (*Tracer).onPoll},
		unix.SYS_EPOLL_PWAIT:     {name: "epoll_pwait", handle: (*Tracer).onPoll},
		unix.SYS_EPOLL_PWAIT2:    {name: "epoll_pwait2", handle: (*Tracer).onPoll},
		unix.SYS_NANOSLEEP:       {name: "nanosleep", clock: true, handle: (*Tracer).onSleep},
		unix.SYS_CLOCK_NANOSLEEP: {name: "clock_nanosleep", clock: true, handle: (*Tracer).onSleep},
		unix.SYS_FUTEX:           {name: "futex", clock: true, argRule: true, handle: (*Tracer).onFutex},
		// Other timed waits (waits.go's timedWaits), untimed ones run as
		// they are.
		unix.SYS_RT_SIGTIMEDWAIT: {name: "rt_sigtimedwait", clock: true, handle: (*Tracer).onTimedWait},
		unix.SYS_SEMTIMEDOP:      {name: "semtimedop", clock: true, handle: (*Tracer).onTimedWait},
		unix.SYS_MQ_TIMEDRECEIVE: {name: "mq_timedreceive", clock: true, handle: (*Tracer).onTimedWait},
		unix.SYS_MQ_TIMEDSEND:    {name: "mq_timedsend", clock: true, handle: (*Tracer).onTimedWait},
		unix.SYS_FUTEX_WAITV:     {name: "futex_waitv", clock: true, handle: (*Tracer).onTimedWait},
		unix.SYS_CLOCK_GETTIME:   {name: "clock_gettime", clock: true, handle: (*Tracer).onClockGettime},
		unix.SYS_GETTIMEOFDAY:    {name: "gettimeofday", clock: true, handle: (*Tracer).onGettimeofday},
		unix.SYS_TIME:            {name: "time", clock: true, handle: (*Tracer).onTime},
		unix.SYS_GETRANDOM:       {name: "getrandom", handle: (*Tracer).onGetrandom},
		// Virtual kernel timers (timers.go). timerfd_create is not gated: a
		// timerfd's clock is read from /proc/PID/fdinfo when it is first armed.
		unix.SYS_TIMERFD_SETTIME:  {name: "timerfd_settime", clock: true, handle: timerGate((*Tracer).onTimerfdSettime)},
		unix.SYS_TIMERFD_GETTIME:  {name: "timerfd_gettime", clock: true, handle: timerGate((*Tracer).onTimerfdGettime)},
		unix.SYS_ALARM:            {name: "alarm", clock: true, handle: timerGate((*Tracer).onAlarm)},
		unix.SYS_SETITIMER:        {name: "setitimer", clock: true, handle: timerGate((*Tracer).onSetitimer)},
		unix.SYS_GETITIMER:        {name: "getitimer", clock: true, handle: timerGate((*Tracer).onGetitimer)},
		unix.SYS_TIMER_CREATE:     {name: "timer_create", clock: true, handle: timerGate((*Tracer).onTimerCreate)},
		unix.SYS_TIMER_SETTIME:    {name: "timer_settime", clock: true, handle: timerGate((*Tracer).onTimerSettime)},
		unix.SYS_TIMER_GETTIME:    {name: "timer_gettime", clock: true, handle: timerGate((*Tracer).onTimerGettime)},
		unix.SYS_TIMER_GETOVERRUN: {name: "timer_getoverrun", clock: true, handle: timerGate((*Tracer).onTimerGetoverrun)},
		unix.SYS_TIMER_DELETE:     {name: "timer_delete", clock: true, handle: timerGate((*Tracer).onTimerDelete)},
		// Syscalls that may sleep on the disk run while nothing else does.
		unix.SYS_FSYNC:           {name: "fsync", handle: (*Tracer).onDiskSync},
		unix.SYS_FDATASYNC:       {name: "fdatasync", handle: (*Tracer).onDiskSync},
		unix.SYS_SYNC_FILE_RANGE: {name: "sync_file_range", handle: (*Tracer).onDiskSync},
		unix.SYS_SYNCFS:          {name: "syncfs", handle: (*Tracer).onDiskSync},
		unix.SYS_SYNC:            {name: "sync", handle: (*Tracer).onDiskSync},
		unix.SYS_MSYNC:           {name: "msync", handle: (*Tracer).onAlone},
		unix.SYS_FALLOCATE:       {name: "fallocate", handle: (*Tracer).onAlone},
		unix.SYS_FTRUNCATE:       {name: "ftruncate", handle: (*Tracer).onAlone},
		unix.SYS_TRUNCATE:        {name: "truncate", handle: (*Tracer).onAlone},
		unix.SYS_RENAME:          {name: "rename", handle: (*Tracer).onAlone},
		unix.SYS_RENAMEAT:        {name: "renameat", handle: (*Tracer).onAlone},
		unix.SYS_RENAMEAT2:       {name: "renameat2", handle: (*Tracer).onAlone},
		// Ways around the gate, refused on sockets (bypass.go).
		unix.SYS_SPLICE:   {name: "splice", handle: (*Tracer).onSocketSplice},
		unix.SYS_SENDFILE: {name: "sendfile", handle: (*Tracer).onSocketSplice},
		unix.SYS_PREADV2:  {name: "preadv2", handle: (*Tracer).onVectorIO},
		unix.SYS_PWRITEV2: {name: "pwritev2", handle: (*Tracer).onVectorIO},
		// Changes to the fd table that would make the fd kind cache stale.
		unix.SYS_DUP2:        {name: "dup2", handle: (*Tracer).onDup},
		unix.SYS_DUP3:        {name: "dup3", handle: (*Tracer).onDup},
		unix.SYS_CLOSE_RANGE: {name: "close_range", handle: (*Tracer).onCloseRange},
		// Changes to what sockOpts caches; the filter stops these three
		// only for F_SETFL, FIONBIO, SO_RCVTIMEO and SO_RCVLOWAT.
		unix.SYS_FCNTL:      {name: "fcntl", argRule: true, handle: (*Tracer).onSockOptsChange},
		unix.SYS_IOCTL:      {name: "ioctl", argRule: true, handle: (*Tracer).onSockOptsChange},
		unix.SYS_SETSOCKOPT: {name: "setsockopt", argRule: true, handle: (*Tracer).onSockOptsChange},
	}
}

// timerGate adapts a timer handler, which needs no syscall number.
func timerGate(h func(t *Tracer, th *thread, a [6]uint64) bool) func(*Tracer, *thread, int, [6]uint64) bool {
	return func(t *Tracer, th *thread, _ int, a [6]uint64) bool { return h(t, th, a) }
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

func (t *Tracer) syscallName(nr int) string {
	if g, ok := t.gates[nr]; ok {
		return g.name
	}
	if name, ok := ungatedNames[nr]; ok {
		return name
	}
	return "syscall" + strconv.Itoa(nr)
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
	t.setState(th, tsGated)
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		t.setState(th, tsRunning)
		return
	}
	nr := th.regs.Syscall()
	if th.proc.node.disk != nil && t.onDisk(th, nr, th.regs.Args()) {
		return
	}
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
	po.op.Object = p.node.inbox()
	po.op.Peer = fi.peerString()
	po.op.Conn = fi.inKey()
	po.op.Bytes = int(a[2])
	po.immediate = t.nonblocking(fi, nr, a)
	t.sockTimeout(po)
	t.takeMmsgTimeout(po)
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
	if fi.kind == fdUnix && nr != unix.SYS_WRITE && nr != unix.SYS_WRITEV {
		return t.onUnixSend(th, nr, a)
	}
	if fi.kind != fdInet || !t.sockGated(th, fi, nr, a) {
		return false
	}
	po := t.newPending(th, sched.Send, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = fi.peerString()
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
	if fam == unix.AF_UNIX {
		return t.onUnixConnect(th, nr, a[1], a[2])
	}
	if (fam != unix.AF_INET && fam != unix.AF_INET6) || !t.gated(ap.Addr()) {
		return false
	}
	fd := int(a[0])
	fi := t.fdOf(th.proc, fd)
	po := t.newPending(th, sched.Connect, nr, a)
	po.fd, po.fi = fd, fi
	po.op.Peer = ap.String()
	po.op.Object = "listen:" + ap.String()
	po.immediate = t.sockOptsOf(fi).nonblock
	po.op.NonBlocking = po.immediate
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
	po.immediate = t.sockOptsOf(fi).nonblock
	t.sockTimeout(po)
	return true
}

// onFutex takes over a timed futex wait's timeout (the filter stops only
// waits that carry one).
func (t *Tracer) onFutex(th *thread, _ int, a [6]uint64) bool {
	return t.onFutexWait(th, a)
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
