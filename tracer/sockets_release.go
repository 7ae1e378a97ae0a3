package tracer

import (
	"errors"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

func (sk *sockets) enabledConnect(p *pendingOp) bool {
	return p.deadline < 0 || p.deadline <= sk.vt.now()
}

// enabledRead: a recv or an accept that will find something, or whose
// socket timeout passed.
func (sk *sockets) enabledRead(p *pendingOp) bool {
	if p.immediate {
		return true
	}
	if p.deadline >= 0 && p.deadline <= sk.vt.now() {
		return true // SO_RCVTIMEO expired
	}
	return p.fi != nil && sk.ops.readyOp(p, p.fi.dup, unix.POLLIN)
}

// enabledSend: a send, unless its connection has DeliverCap bytes in
// flight.
func (sk *sockets) enabledSend(p *pendingOp) bool {
	if c := sk.net.connOf(p.fi.outKey()); c != nil && c.queued >= sk.opts.DeliverCap {
		return false
	}
	return true
}

func (sk *sockets) enabledPoll(p *pendingOp) bool {
	if p.immediate || sk.ops.readyProbe(p) {
		return true
	}
	return p.deadline >= 0 && p.deadline <= sk.vt.now()
}

// timedOut says whether a recv or accept is released because its socket
// timeout passed with nothing to read: the kernel would return EAGAIN.
func (sk *sockets) timedOut(p *pendingOp) bool {
	return !p.immediate && p.deadline >= 0 && p.deadline <= sk.vt.now() &&
		(p.fi == nil || !sk.ops.readyOp(p, p.fi.dup, unix.POLLIN))
}

func (sk *sockets) releasePoll(p *pendingOp) (Released, error) {
	th := p.th
	if !p.immediate && p.deadline >= 0 && p.deadline <= sk.vt.now() && !sk.ops.readyProbe(p) {
		th.timeoutPoll(p)
	} else {
		th.cont(0)
	}
	return Released{Causes: p.causes}, nil
}

// releaseSend captures a send's bytes as messages in flight, or lets it
// run natively.
func (sk *sockets) releaseSend(p *pendingOp) (Released, error) {
	th, nw := p.th, sk.net
	r := Released{Causes: p.causes}
	// A socket that was reset or fully shut down fails the send in the
	// kernel (ECONNRESET, EPIPE): let it, rather than capture bytes no
	// one can receive.
	if sk.opts.Capture && p.fi.sockType == unix.SOCK_DGRAM {
		n, err := nw.captureDgram(p)
		if sk.answerCapture(p, &r, n, err, "capturing datagram, sending it natively") {
			return r, nil
		}
	}
	if sk.opts.Capture && p.fi.sockType == unix.SOCK_STREAM && !sk.ops.readyOp(p, p.fi.dup, unix.POLLERR|unix.POLLHUP) {
		n, err := nw.capture(p)
		if sk.answerCapture(p, &r, n, err, "capturing send, running it natively") {
			return r, nil
		}
	}
	// Natively its bytes reach the peer now, and the sender may block
	// until the peer reads (see stirOp).
	nw.invalidate()
	nw.stirPeer(p)
	if p.fi.peer.IsValid() {
		if nw.nativeSends == nil {
			nw.nativeSends = map[string]bool{}
		}
		nw.nativeSends[p.fi.outKey()] = true
	}
	th.cont(0)
	return r, nil
}

// answerCapture answers a send whose bytes were captured (err nil) or
// could not be read (EFAULT), and reports false, with native's message,
// for one that should run natively. Bytes lockstep cannot read (a
// memfd_secret mapping, which the filter refuses, or memory the program
// unmapped or protected) are refused as the kernel refuses a bad buffer:
// run natively, the kernel could read them (or part of them), and they
// would overtake the bytes queued before them.
func (sk *sockets) answerCapture(p *pendingOp, r *Released, n int64, err error, native string) bool {
	switch {
	case err == nil:
		r.Result = n
		if n > 0 {
			r.Data = sk.net.freshData()
		}
	case errors.Is(err, unix.EFAULT):
		sk.log.Warn("refused a send whose bytes lockstep cannot read", "op", p.op.String(), "err", err)
		r.Result = -int64(unix.EFAULT)
	default:
		sk.log.Warn(native, "op", p.op.String(), "err", err)
		return false
	}
	p.th.fake(r.Result)
	return true
}

// releaseRecv lets a recv read what was delivered, and names the
// deliveries it consumed as its causes.
func (sk *sockets) releaseRecv(p *pendingOp) (Released, error) {
	th := p.th
	r := Released{Causes: p.causes}
	if sk.timedOut(p) {
		th.fake(-int64(unix.EAGAIN))
		r.Result = -int64(unix.EAGAIN)
		return r, nil
	}
	avail, ok := sk.net.unread(p)
	if !ok {
		avail = p.queued()
	}
	if p.nothingToRead(avail) {
		// A non-blocking read released with nothing queued and no FIN:
		// it returns EAGAIN and moves no bytes (the kernel records none).
		r.Result = -int64(unix.EAGAIN)
	} else {
		ids, data := sk.net.consume(p, avail)
		r.Causes, r.Data = append(r.Causes, ids...), data
		sk.vt.releaseMmsgTimeout(p)
	}
	th.cont(0)
	return r, nil
}

func (sk *sockets) releaseAccept(p *pendingOp) (Released, error) {
	r := Released{Causes: p.causes}
	if sk.timedOut(p) {
		p.th.fake(-int64(unix.EAGAIN))
		return r, nil
	}
	if c := sk.net.popConnect(p.op.Object); c != 0 {
		r.Causes = append(r.Causes, c)
	}
	p.th.cont(0)
	return r, nil
}

func (sk *sockets) releaseConnect(p *pendingOp) (Released, error) {
	th, nw := p.th, sk.net
	r := Released{Causes: p.causes}
	if p.silent {
		th.fake(-int64(unix.EHOSTUNREACH))
		r.Result = -int64(unix.EHOSTUNREACH)
		return r, nil
	}
	nw.connects[p.op.Object] = append(nw.connects[p.op.Object], p.op.ID)
	if p.fi != nil && p.fi.dup >= 0 {
		nw.bindEphemeral(th.proc.node, p.fi)
		peer, _ := netip.ParseAddrPort(p.op.Peer)
		if nw.cutBetween(th.proc.node.addr, peer.Addr()) {
			// Its SYN goes into the partition's firewall: nothing to
			// wait for; the heal ends the attempt (see applyCut).
			nw.noteCutConnect(th.proc.node, p.fi, peer)
		} else {
			th.connecting = &connectWait{fi: p.fi, peer: peer, since: time.Now()}
		}
	}
	th.cont(0)
	return r, nil
}

func (sk *sockets) releaseClose(p *pendingOp) (Released, error) {
	th := p.th
	fi := th.proc.forgetFd(p.fd)
	sk.net.releaseDup(fi)
	if fi != nil {
		sk.net.expectFin(fi.local, fi.peer)
	}
	th.cont(0)
	return Released{Causes: p.causes}, nil
}

func (sk *sockets) releaseShutdown(p *pendingOp) (Released, error) {
	how := int(p.call.flags) // shutdown's how
	if c := sk.net.connOf(p.fi.outKey()); c != nil && len(c.queue) > 0 && how != unix.SHUT_RD {
		// The FIN must follow the queued data: shut down our duplicate
		// once drained and let the tracee's call succeed now.
		c.shutWr = true
		p.th.fake(0)
	} else {
		p.th.cont(0)
	}
	return Released{Causes: p.causes}, nil
}

// timeoutPoll makes a poll-family call return "timed out" without waiting.
func (th *thread) timeoutPoll(p *pendingOp) {
	c := p.call
	switch c.nr {
	case unix.SYS_POLL, unix.SYS_PPOLL:
		n := int(c.n)
		if n > 0 && n <= 4096 {
			buf := make([]byte, 8*n)
			if ptrace.ReadMem(th.tid, c.buf, buf) == nil {
				for i := 0; i < n; i++ {
					buf[8*i+6], buf[8*i+7] = 0, 0
				}
				ptrace.WriteMem(th.tid, c.buf, buf)
			}
		}
	case unix.SYS_SELECT, unix.SYS_PSELECT6:
		nfds := int(c.n)
		for _, addr := range c.fdSets {
			if addr != 0 && nfds > 0 && nfds <= 1024 {
				ptrace.WriteMem(th.tid, addr, make([]byte, (nfds+63)/64*8))
			}
		}
		if c.nr == unix.SYS_SELECT && c.timeout != 0 {
			ptrace.WriteMem(th.tid, c.timeout, make([]byte, 16)) // Linux updates the timeout
		}
	}
	th.fake(0)
}
