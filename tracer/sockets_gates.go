package tracer

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// onRecv makes a receive from another node's connection (or a datagram
// socket) an op; a read of the random device is answered from the seed,
// one of the process's own stat files with its RSS fixed (proc_stat.go).
func (sk *sockets) onRecv(th *thread, c call) bool {
	p := th.proc
	fi := p.fdOf(c.fd)
	if fi.kind == fdRandom && c.nr == unix.SYS_READ && p.rand != nil {
		th.fakeRandom(c.buf, c.n)
		return true
	}
	if fi.kind == fdProcStat && c.nr == unix.SYS_READ {
		th.fakeProcStat(fi.stat, c.buf, c.n)
		return true
	}
	if fi.kind == fdUnix {
		return sk.vt.onUnixRecv(th, c, fi)
	}
	if fi.kind != fdInet || !sk.net.sockGated(th, fi, c) {
		return false
	}
	po := sk.ops.newPending(th, sched.Recv, c)
	po.fd, po.fi = c.fd, fi
	po.op.Object = p.node.inbox()
	po.op.Peer = fi.peerString()
	po.op.Conn = fi.inKey()
	po.op.Bytes = int(c.n)
	po.immediate = sk.pt.nonblocking(fi, c)
	sk.vt.sockTimeout(po)
	sk.vt.takeMmsgTimeout(po)
	if c.nr == unix.SYS_RECVMSG || c.nr == unix.SYS_READV {
		po.op.Bytes = 0
	}
	return true
}

// onSend makes a send on another node's connection (or a datagram socket)
// an op.
func (sk *sockets) onSend(th *thread, c call) bool {
	p := th.proc
	fi := p.fdOf(c.fd)
	if fi.kind == fdUnix && c.nr != unix.SYS_WRITE && c.nr != unix.SYS_WRITEV {
		return sk.onUnixDests(th, c)
	}
	if fi.kind != fdInet || !sk.net.sockGated(th, fi, c) {
		return false
	}
	po := sk.ops.newPending(th, sched.Send, c)
	po.fd, po.fi = c.fd, fi
	po.op.Peer = fi.peerString()
	po.op.Conn = fi.outKey()
	if fi.sockType == unix.SOCK_DGRAM {
		d := th.dgramDest(fi, c)
		po.op.Peer, po.op.Conn = d.String(), p.dgramSource(fi).String()+">"+d.String()
	}
	if fi.peer.IsValid() {
		po.op.Object = "" // enqueuing is local; the delivery touches the inbox
	}
	if c.nr == unix.SYS_WRITE || c.nr == unix.SYS_SENDTO {
		po.op.Bytes = int(c.n)
	}
	return true
}

// onClose makes closing a listener or a connection to another node an op
// (its FIN is a message); any other close only updates the fd cache.
func (sk *sockets) onClose(th *thread, c call) bool {
	p := th.proc
	fi := p.fds[c.fd]
	if fi != nil && fi.kind == fdInet && (fi.listening || (fi.peer.IsValid() && sk.pt.gated(fi.peer.Addr()))) {
		po := sk.ops.newPending(th, sched.Close, c)
		po.fd, po.fi = c.fd, fi
		po.op.Peer = addrString(fi.peer)
		po.op.Conn = fi.outKey()
		return true
	}
	sk.net.releaseDup(p.forgetFd(c.fd))
	return false
}

// onShutdown makes shutting down a connection to another node an op.
func (sk *sockets) onShutdown(th *thread, c call) bool {
	fi := th.proc.fdOf(c.fd)
	if fi.kind != fdInet || !fi.peer.IsValid() || !sk.pt.gated(fi.peer.Addr()) {
		return false
	}
	po := sk.ops.newPending(th, sched.Shutdown, c)
	po.fd, po.fi = c.fd, fi
	po.op.Peer = addrString(fi.peer)
	po.op.Conn = fi.outKey()
	return true
}

// onDup forgets what the target descriptor of dup2/dup3 was.
func (sk *sockets) onDup(th *thread, c call) bool {
	if c.fd2 != c.fd {
		sk.net.releaseDup(th.proc.forgetFd(c.fd2))
	}
	return false
}

// onCloseRange forgets the descriptors close_range closes: from fd to fd2,
// both unsigned (~0U is the last).
func (sk *sockets) onCloseRange(th *thread, c call) bool {
	p := th.proc
	for fd := range p.fds {
		if uint32(fd) >= uint32(c.fd) && uint32(fd) <= uint32(c.fd2) {
			sk.net.releaseDup(p.forgetFd(fd))
		}
	}
	return false
}

// onConnect makes a connect to another node (or to an address on the
// subnet that no node has) an op.
func (sk *sockets) onConnect(th *thread, c call) bool {
	fam, ap := decodeSockaddr(th.tid, c.addr, c.addrLen)
	if fam == unix.AF_UNIX {
		return sk.onUnixDests(th, c)
	}
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return false
	}
	fi := th.proc.fdOf(c.fd)
	if !sk.pt.gated(ap.Addr()) {
		if ap.Addr().Unmap().IsLoopback() {
			sk.net.bindLocal(th.proc.node, fi)
		}
		return false
	}
	po := sk.ops.newPending(th, sched.Connect, c)
	po.fd, po.fi = c.fd, fi
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

// onBind answers a bind of an internet socket to port 0 (any port): it
// binds the socket, through lockstep's duplicate, to the node's next
// listening port, counted down from the top of the ephemeral range, and
// returns 0 as the kernel's bind would. The kernel's choice is salted at
// random, and a listener's port is in the names of its accepts and of its
// peers' connects (and in what the program tells its peers): a replay
// would look for ops on another listener. RabbitMQ's nodes listen so at
// boot. Counting down keeps these apart from bindEphemeral's, which count
// up, so neither moves the other's. Any other bind, and one lockstep's
// own bind refuses (an address the node does not have), runs natively,
// with the kernel's answer.
func (sk *sockets) onBind(th *thread, c call) bool {
	fam, ap := decodeSockaddr(th.tid, c.addr, c.addrLen)
	if (fam != unix.AF_INET && fam != unix.AF_INET6) || ap.Port() != 0 || ap.Addr().IsLinkLocalUnicast() {
		// (A link-local address needs its scope, which ap does not keep.)
		return false
	}
	fi := th.proc.fdOf(c.fd)
	if fi.kind != fdInet || fi.dup < 0 || (fi.sockType != unix.SOCK_STREAM && fi.sockType != unix.SOCK_DGRAM) {
		return false
	}
	ni := th.proc.node
	for try := 0; try < 64; try++ {
		port := lastEphemeral - ni.listenPorts%(lastEphemeral-firstEphemeral+1)
		var sa unix.Sockaddr
		if fam == unix.AF_INET {
			sa = &unix.SockaddrInet4{Port: port, Addr: ap.Addr().As4()}
		} else {
			// As16 maps an IPv4 address back to ::ffff:a.b.c.d, as the
			// program gave it (decodeSockaddr unmaps it).
			sa = &unix.SockaddrInet6{Port: port, Addr: ap.Addr().As16()}
		}
		ni.listenPorts++
		err := unix.Bind(fi.dup, sa)
		if err == nil {
			if got, err := unix.Getsockname(fi.dup); err == nil {
				fi.local = sockaddrToAddrPort(got)
			}
			th.fake(0)
			return true
		}
		if err != unix.EADDRINUSE {
			sk.log.Debug("binding a port for a bind to port 0; the kernel picks one", "node", ni.name, "addr", ap.Addr(), "err", err)
			return false
		}
	}
	return false
}

// onAccept makes an accept on an internet socket an op.
func (sk *sockets) onAccept(th *thread, c call) bool {
	p := th.proc
	fi := p.fdOf(c.fd)
	if fi.kind != fdInet {
		return false
	}
	po := sk.ops.newPending(th, sched.Accept, c)
	po.fd, po.fi = c.fd, fi
	po.op.Object = "listen:" + p.listenKey(fi)
	po.immediate = sk.pt.sockOptsOf(fi).nonblock
	sk.vt.sockTimeout(po)
	return true
}

// onPoll turns a poll-family call into an op with a probe set and deadline.
func (sk *sockets) onPoll(th *thread, c call) bool {
	po := sk.ops.newPending(th, sched.Poll, c)
	po.op.Object = "inbox:" + th.proc.node.name
	var timeout int64 // ns, -1 infinite
	switch c.nr {
	case unix.SYS_POLL, unix.SYS_PPOLL:
		po.probePollfds(c)
		timeout = pollTimeout(th, c)
	case unix.SYS_SELECT, unix.SYS_PSELECT6:
		po.probeFdSets(c)
		timeout = selectTimeout(th, c)
	default: // epoll family: the epoll fd is readable when events are ready
		po.addProbe(c.fd, unix.POLLIN)
		timeout = pollTimeout(th, c)
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

// probePollfds probes what a poll or ppoll's struct pollfd array asks
// for (at most 4096 of them).
func (po *pendingOp) probePollfds(c call) {
	n := min(int(c.n), 4096)
	buf := make([]byte, 8*max(n, 0))
	if n > 0 && ptrace.ReadMem(po.th.tid, c.buf, buf) == nil {
		for i := 0; i < n; i++ {
			fd := int(int32(binary.LittleEndian.Uint32(buf[8*i:])))
			ev := int16(binary.LittleEndian.Uint16(buf[8*i+4:]))
			po.addProbe(fd, ev)
		}
	}
}

// probeFdSets probes what a select or pselect6's descriptor sets ask for
// (the first 1024 descriptors).
func (po *pendingOp) probeFdSets(c call) {
	nfds := min(int(c.n), 1024)
	events := [3]int16{unix.POLLIN, unix.POLLOUT, unix.POLLPRI}
	for s, addr := range c.fdSets {
		if addr == 0 || nfds == 0 {
			continue
		}
		buf := make([]byte, (nfds+63)/64*8)
		if ptrace.ReadMem(po.th.tid, addr, buf) != nil {
			continue
		}
		for fd := 0; fd < nfds; fd++ {
			if buf[fd/8]&(1<<(fd%8)) != 0 {
				po.addProbe(fd, events[s])
			}
		}
	}
}

// pollTimeout is a poll's or an epoll wait's timeout in nanoseconds, -1
// for none: poll's and epoll_wait's count milliseconds, ppoll's and
// epoll_pwait2's point at a timespec (NULL: none).
func pollTimeout(th *thread, c call) int64 {
	switch c.nr {
	case unix.SYS_PPOLL, unix.SYS_EPOLL_PWAIT2:
		if c.timeout != 0 {
			if ns, ok := readTimespec(th.tid, c.timeout); ok {
				return ns
			}
		}
	default:
		if ms := int32(c.timeout); ms >= 0 {
			return int64(ms) * 1e6
		}
	}
	return -1
}

// selectTimeout is a select's (timeval) or pselect6's (timespec) timeout
// in nanoseconds, -1 for none.
func selectTimeout(th *thread, c call) int64 {
	switch {
	case c.timeout == 0:
	case c.nr == unix.SYS_SELECT:
		var b [16]byte
		if ptrace.ReadMem(th.tid, c.timeout, b[:]) == nil {
			sec := int64(binary.LittleEndian.Uint64(b[:]))
			usec := int64(binary.LittleEndian.Uint64(b[8:]))
			return sec*1e9 + usec*1e3
		}
	default:
		if ns, ok := readTimespec(th.tid, c.timeout); ok {
			return ns
		}
	}
	return -1
}

// silentConnect is how long, in virtual time, a blocking connect to an
// address on the subnet that no node has takes to fail with EHOSTUNREACH:
// Linux gives up after three unanswered ARP probes a second apart. Left to
// the kernel it would take that long in real time, beyond any schedule.
// A non-blocking one fails at once, as it does once the kernel's neighbour
// entry has failed.
const silentConnect = 3 * time.Second
