package tracer

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// stirOp stirs the nodes an op's release may wake threads on: its own,
// and the peer's when a packet goes there. A send (a native one stirs its
// peer itself), an accept, a poll or a sleep sends nothing another node's
// threads wait for (blocking calls on a cluster socket are ops, not
// sleepers); a delivery reaches its receiver; a recv may open the window
// of a sender blocked in a send that ran natively; a connect, a close or a
// shutdown reaches the peer.
func (nw *network) stirOp(p *pendingOp, k *opKind) {
	if p.th != nil && p.th.proc != nil {
		p.th.proc.node.stir()
	}
	if k.wakesPeer != nil {
		k.wakesPeer(p)
	}
}

// stirNativeSender stirs the peer of a recv's socket when a send ran
// natively on its connection.
func (nw *network) stirNativeSender(p *pendingOp) {
	if p.fi != nil && nw.nativeSends[p.fi.inKey()] {
		nw.stirPeer(p)
	}
}

// stirReceiver stirs the node a delivery reaches.
func (nw *network) stirReceiver(p *pendingOp) {
	if p.chunk != nil && p.chunk.conn != nil {
		nw.pt.nodeAt(p.chunk.conn.dst.Addr()).stir()
		return
	}
	nw.stirPeer(p)
}

// stirPeer stirs the node at the other end of p's socket.
func (nw *network) stirPeer(p *pendingOp) {
	if p.fi != nil && p.fi.peer.IsValid() {
		nw.pt.nodeAt(p.fi.peer.Addr()).stir()
	}
	// A datagram, a connect, an unconnected socket: the peer is in the
	// op's name only.
	if ap, err := netip.ParseAddrPort(p.op.Peer); err == nil {
		nw.pt.nodeAt(ap.Addr()).stir()
	}
}

// sockGated says whether a socket call talks to another node.
func (nw *network) sockGated(th *thread, fi *fdInfo, c call) bool {
	if fi.sockType == unix.SOCK_DGRAM {
		return nw.dgramGated(th, fi, c)
	}
	if fi.peer.IsValid() {
		return nw.pt.gated(fi.peer.Addr())
	}
	return false
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
