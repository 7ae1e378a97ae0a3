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
func (sk *sockets) onRecv(th *thread, nr int, a [6]uint64) bool {
	p := th.proc
	fd := int(a[0])
	fi := p.fdOf(fd)
	if fi.kind == fdRandom && nr == unix.SYS_READ && p.rand != nil {
		th.fakeRandom(a[1], a[2])
		return true
	}
	if fi.kind == fdProcStat && nr == unix.SYS_READ {
		th.fakeProcStat(fi.stat, a[1], a[2])
		return true
	}
	if fi.kind == fdUnix {
		return sk.vt.onUnixRecv(th, nr, a, fi)
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
		return sk.onUnixDests(th, nr, a)
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
		return sk.onUnixDests(th, nr, a)
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

// silentConnect is how long, in virtual time, a blocking connect to an
// address on the subnet that no node has takes to fail with EHOSTUNREACH:
// Linux gives up after three unanswered ARP probes a second apart. Left to
// the kernel it would take that long in real time, beyond any schedule.
// A non-blocking one fails at once, as it does once the kernel's neighbour
// entry has failed.
const silentConnect = 3 * time.Second
