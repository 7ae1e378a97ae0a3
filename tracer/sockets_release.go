package tracer

import (
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
)

// opKind is what the tracer does with the pending ops of one kind: what
// their readiness depends on, when they are enabled and how they are
// released. kindTable has one entry per kind the tracer makes; a new kind
// is an entry there and its functions, in the part that owns its state.
type opKind struct {
	// polls appends the descriptors the op's readiness depends on; nil:
	// none.
	polls func(fds []unix.PollFd, p *pendingOp) []unix.PollFd
	// books answers the op's readiness from lockstep's books, when ok,
	// without a poll (see network.knownRecv); notePolled records that a
	// poll found it not ready, for books. Nil: always polled.
	books      func(p *pendingOp) (ready, ok bool)
	notePolled func(p *pendingOp)
	// enabled says whether releasing the op now would not block.
	enabled func(p *pendingOp) bool
	// interruptible: a signal lockstep knows was sent ends the wait
	// (vtime.interruptedBySignal), which enables it.
	interruptible bool
	// wakesPeer stirs the nodes besides the op's own that its release may
	// wake threads on (see network.stirOp); nil: none.
	wakesPeer func(p *pendingOp)
	// calm: releasing the op changes no socket lockstep's books vouch
	// for, so netGen stays (network.knownRecv).
	calm bool
	// threadName: the op's deadline records its thread's name
	// (Deadline.Thread).
	threadName bool
	// release lets the op proceed and says what it did.
	release func(p *pendingOp) (Released, error)
}

// kindTable returns the op kinds the tracer makes, bound to the parts of t
// that own their state.
func kindTable(t *Tracer) map[sched.Kind]*opKind {
	nw, sk, vt := t.net, t.sk, t.vt
	always := func(*pendingOp) bool { return true }
	return map[sched.Kind]*opKind{
		sched.Deliver: {polls: pollDeliver, enabled: nw.enabledDeliver, wakesPeer: nw.stirReceiver,
			calm: true, release: nw.releaseDeliver},
		sched.Send: {polls: pollErr, books: nw.knownSend, notePolled: nw.calmSend,
			enabled: sk.enabledSend, calm: true, release: sk.releaseSend},
		sched.Recv: {polls: pollIn, books: nw.knownRecv, notePolled: nw.calmRecv,
			enabled: sk.enabledRead, interruptible: true, wakesPeer: nw.stirNativeSender,
			calm: true, release: sk.releaseRecv},
		sched.Accept: {polls: pollIn, enabled: sk.enabledRead, interruptible: true,
			release: sk.releaseAccept},
		sched.Connect:  {enabled: sk.enabledConnect, wakesPeer: nw.stirPeer, release: sk.releaseConnect},
		sched.Close:    {enabled: always, wakesPeer: nw.stirPeer, release: sk.releaseClose},
		sched.Shutdown: {enabled: always, wakesPeer: nw.stirPeer, release: sk.releaseShutdown},
		sched.Poll: {polls: pollProbe, enabled: sk.enabledPoll, interruptible: true,
			calm: true, release: sk.releasePoll},
		sched.Sleep: {enabled: vt.enabledSleep, interruptible: true, calm: true, threadName: true,
			release: vt.releaseSleep},
	}
}

// enabled says whether releasing p now would not block.
func (ot *opTable) enabled(p *pendingOp) bool {
	k := ot.kinds[p.op.Kind]
	if k.interruptible && ot.vt.interruptedBySignal(p) {
		return true
	}
	return k.enabled(p)
}

// enabledOps is enabled for each of ops, in a buffer reused from state to
// state.
func (ot *opTable) enabledOps(ops []*pendingOp) []bool {
	en := ot.enabledBuf[:0]
	for _, p := range ops {
		en = append(en, ot.enabled(p))
	}
	ot.enabledBuf = en
	return en
}

// release lets one pending op proceed.
func (ot *opTable) release(id uint64) (Released, error) {
	p := ot.pending[id]
	if p == nil {
		return Released{}, errUnknownOp(id)
	}
	delete(ot.pending, id)
	k := ot.kinds[p.op.Kind]
	ot.net.stirOp(p, k)
	if th := p.th; th != nil {
		th.pending = nil
		th.lastOp = id
	}
	if !k.calm {
		ot.net.netGen++
	}
	return k.release(p)
}

// pollDeliver: a delivery whose sending socket held bytes back waits for
// room in it.
func pollDeliver(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if c := p.chunk.conn; c != nil && c.blocked && c.dup >= 0 && len(c.queue) > 0 && c.queue[0] == p {
		fds = append(fds, unix.PollFd{Fd: int32(c.dup), Events: unix.POLLOUT})
	}
	return fds
}

// pollIn: a blocking recv or accept waits for its socket to be readable.
func pollIn(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if !p.immediate && p.fi != nil && p.fi.dup >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(p.fi.dup), Events: unix.POLLIN})
	}
	return fds
}

// pollErr: a captured send checks its stream socket for an error first.
func pollErr(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if p.fi != nil && p.fi.dup >= 0 && p.fi.sockType == unix.SOCK_STREAM {
		fds = append(fds, unix.PollFd{Fd: int32(p.fi.dup), Events: unix.POLLERR | unix.POLLHUP})
	}
	return fds
}

// pollProbe: a poll-family call waits for what it polls.
func pollProbe(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if !p.immediate {
		fds = append(fds, p.probe...)
	}
	return fds
}

// enabledDeliver: only the oldest undelivered chunk of a connection is
// enabled, when the sending socket and the receiver have room for it.
func (nw *network) enabledDeliver(p *pendingOp) bool {
	if p.chunk.dg != nil {
		return true // datagrams keep no order
	}
	c := p.chunk.conn
	if len(c.queue) == 0 || c.queue[0] != p {
		return false
	}
	if c.blocked && !nw.ops.readyOp(p, c.dup, unix.POLLOUT) {
		return false
	}
	return nw.roomFor(c, len(p.chunk.data))
}

// releaseDeliver delivers a chunk of a stream or a datagram.
func (nw *network) releaseDeliver(p *pendingOp) (Released, error) {
	if p.chunk.dg != nil {
		return nw.deliverDgram(p)
	}
	return nw.deliver(p)
}

func (vt *vtime) enabledSleep(p *pendingOp) bool { return p.deadline <= vt.now() }

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
	if c := sk.net.conns[p.fi.outKey()]; c != nil && c.queued >= sk.opts.DeliverCap {
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
		if err == nil {
			r.Result = n
			if n > 0 {
				r.Data = nw.freshData()
			}
			th.fake(n)
			return r, nil
		}
		sk.log.Warn("capturing datagram, sending it natively", "op", p.op.String(), "err", err)
	}
	if sk.opts.Capture && p.fi.sockType == unix.SOCK_STREAM && p.nr != unix.SYS_SENDMMSG && !sk.ops.readyOp(p, p.fi.dup, unix.POLLERR|unix.POLLHUP) {
		n, err := nw.capture(p)
		if err == nil {
			r.Result = n
			if n > 0 {
				r.Data = nw.freshData()
			}
			th.fake(n)
			return r, nil
		}
		sk.log.Warn("capturing send, running it natively", "op", p.op.String(), "err", err)
	}
	// Natively its bytes reach the peer now, and the sender may block
	// until the peer reads (see stirOp).
	nw.netGen++
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
		if nw.cutBetween(th.proc.node.addr.Unmap(), peer.Addr().Unmap()) {
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
	how := int(p.args[1])
	if c := sk.net.conns[p.fi.outKey()]; c != nil && len(c.queue) > 0 && how != unix.SHUT_RD {
		// The FIN must follow the queued data: shut down our duplicate
		// once drained and let the tracee's call succeed now.
		c.shutWr = true
		p.th.fake(0)
	} else {
		p.th.cont(0)
	}
	return Released{Causes: p.causes}, nil
}
