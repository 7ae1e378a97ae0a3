package tracer

import (
	"log/slog"
	"net/netip"

	"golang.org/x/sys/unix"
)

// network owns delivery (DESIGN.md "Messages in flight"): the connections
// lockstep tracks, the bytes in flight, datagrams, FINs held or waited for,
// partitions and what they hold.
type network struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable

	cut map[[2]netip.Addr]bool // address pairs a partition separates
	// cutConnects are non-blocking connects released into a partition.
	cutConnects []cutConnect
	finsHeld    []*conn // connections whose FIN waits for a heal
	conns       map[string]*conn
	connects    map[string][]uint64 // released connects per listener, for accept causes
	finWaits    []finWait
	held        []*conn // connections whose sender holds delivered bytes back for want of window
	bufs        bufPool // capture buffers
	// nativeSends names the connections (by their sender's key) on which
	// a send ran natively (see stirOp).
	nativeSends map[string]bool
	// netGen numbers the spans in which no socket can have gained an end
	// of stream, an error or bytes lockstep's books miss (see known).
	netGen uint64
	// lateFins names the connections (by their receiver's inKey) whose FIN
	// lockstep stopped waiting for (netSettled).
	lateFins map[string]bool
}

func newNetwork(opts *Options, log *slog.Logger, stats *Stats, pt *procTable, ops *opTable) *network {
	return &network{
		opts: opts, log: log, stats: stats, pt: pt, ops: ops,
		conns:    map[string]*conn{},
		connects: map[string][]uint64{},
		netGen:   1, // a zero calmRecv or calmSend was never read
	}
}

// releaseDup closes lockstep's duplicate unless a connection still needs it
// to deliver queued bytes.
func (nw *network) releaseDup(fi *fdInfo) {
	if fi == nil {
		return
	}
	nw.netGen++ // the socket may close: a FIN, or a reset
	if fi.kind == fdInet && fi.peer.IsValid() {
		if c := nw.conns[fi.outKey()]; c != nil {
			c.closing = true
			nw.maybeFinishConn(c)
		}
	}
	if fi.dup >= 0 {
		unix.Close(fi.dup)
		fi.dup = -1
	}
}

// bindEphemeral binds an unbound socket about to connect or send to the
// node's next ephemeral port, through lockstep's duplicate. The kernel
// picks a random one (its port offsets are salted), which a program sees
// (Go's and Java's connections name their peers by address and port, maps
// keyed by them iterate by their hashes), so a replay or a rerun with the
// same seed would not see the same ports. Counted per node in the order
// of the schedule, they are the same in every run of it; namespaces start
// each trial without sockets (netns.Cluster.Reset), so they are free.
func (nw *network) bindEphemeral(ni *nodeInfo, fi *fdInfo) {
	sa, err := unix.Getsockname(fi.dup)
	if err != nil {
		return
	}
	for try := 0; try < 64; try++ {
		port := firstEphemeral + ni.ports%(lastEphemeral-firstEphemeral+1)
		var bind unix.Sockaddr
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			if sa.Port != 0 {
				return
			}
			bind = &unix.SockaddrInet4{Port: port}
		case *unix.SockaddrInet6:
			if sa.Port != 0 {
				return
			}
			bind = &unix.SockaddrInet6{Port: port}
		default:
			return
		}
		ni.ports++
		err = unix.Bind(fi.dup, bind)
		if err != unix.EADDRINUSE {
			break
		}
	}
	if err != nil {
		nw.log.Debug("binding an ephemeral port; the kernel picks one", "node", ni.name, "err", err)
		return
	}
	if sa, err := unix.Getsockname(fi.dup); err == nil {
		fi.local = sockaddrToAddrPort(sa)
	}
}

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
		nw.pt.byAddr[p.chunk.conn.dst.Addr().Unmap()].stir()
		return
	}
	nw.stirPeer(p)
}

// stirPeer stirs the node at the other end of p's socket.
func (nw *network) stirPeer(p *pendingOp) {
	if p.fi != nil && p.fi.peer.IsValid() {
		nw.pt.byAddr[p.fi.peer.Addr().Unmap()].stir()
	}
	// A datagram, a connect, an unconnected socket: the peer is in the
	// op's name only.
	if ap, err := netip.ParseAddrPort(p.op.Peer); err == nil {
		nw.pt.byAddr[ap.Addr().Unmap()].stir()
	}
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
