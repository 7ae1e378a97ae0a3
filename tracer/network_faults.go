package tracer

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
	"github.com/lockstep-dev/lockstep/netcut"
)

// applyCut puts a cut of the network up, or takes it down, at the moment
// its Cut documents: up once the connections it crosses have acknowledged
// what they received; down once the connects made into it are ended, and
// then the FINs held across it are sent.
//
// Precondition: runs on the tracer thread.
func (nw *network) applyCut(c Cut) error {
	if !c.Heal {
		nw.flushAcks(netcut.Of(c.Cut))
		if err := nw.cuts.Put(c.Cut); err != nil {
			return fmt.Errorf("putting up a cut of %v from %v: %w", c.A, c.B, err)
		}
		return nil
	}
	// A connect either way across a one-way cut was one into it.
	nw.abortCutConnects(netcut.Of(c.Cut))
	if err := nw.cuts.Lift(c.Cut); err != nil {
		return fmt.Errorf("healing the cut of %v from %v: %w", c.A, c.B, err)
	}
	held := nw.finsHeld
	nw.finsHeld = nil
	for _, conn := range held {
		nw.maybeFinishConn(conn)
	}
	return nil
}

// cutStops reports whether a cut in force drops the messages from src to
// dst.
func (nw *network) cutStops(src, dst netip.AddrPort) bool { return stops(nw.cuts, src, dst) }

// cutBetween reports whether a cut in force stops a connection between a
// and b from opening: its handshake needs both ways.
func (nw *network) cutBetween(a, b netip.Addr) bool { return between(nw.cuts, a, b) }

// stops and between are the only ways into a set of cuts by address: a
// socket's addresses come v4-mapped from a dual-stack socket, the cuts'
// are the nodes' v4 ones.

// stops reports whether cuts drop the messages of the connection direction
// from src to dst.
func stops(cuts *netcut.Set[netip.Addr], src, dst netip.AddrPort) bool {
	return cuts.Stops(src.Addr().Unmap(), dst.Addr().Unmap())
}

// between reports whether cuts hold a link between a and b, either way.
func between(cuts *netcut.Set[netip.Addr], a, b netip.Addr) bool {
	return cuts.Between(a.Unmap(), b.Unmap())
}

// noteCutConnect remembers a connect whose SYN the partition drops, by
// the address bindEphemeral gave its socket.
func (nw *network) noteCutConnect(ni *nodeInfo, fi *fdInfo, peer netip.AddrPort) {
	local := fi.local
	if local.Port() == 0 {
		return // the kernel picks the port at the connect: no name to find it by
	}
	if local.Addr().IsUnspecified() {
		// Bound to the wildcard: the connect takes the node's address.
		local = netip.AddrPortFrom(ni.addr.Unmap(), local.Port())
	}
	nw.cutConnects = append(nw.cutConnects, cutConnect{node: ni, local: local, peer: peer})
}

// abortCutConnects ends, at a heal, the connects still waiting for an
// answer to a SYN the partition dropped: the kernel would retransmit it
// after a second or more of real time and complete the connection at a
// moment no schedule fixes. The program sees the attempt fail
// (ECONNABORTED), as one whose SYN retries ran out, and dials again.
func (nw *network) abortCutConnects(healed *netcut.Set[netip.Addr]) {
	keep := nw.cutConnects[:0]
	for _, cc := range nw.cutConnects {
		if !between(healed, cc.local.Addr(), cc.peer.Addr()) {
			keep = append(keep, cc) // across another cut, still in force
			continue
		}
		d, err := cc.node.diagFor()
		if err != nil {
			continue
		}
		if _, state, err := d.Lookup(cc.local, cc.peer); err == nil && state == tcpSynSent {
			if err := d.Destroy(cc.local, cc.peer); err != nil {
				nw.log.Warn("aborting a connect made into a partition", "node", cc.node.name, "local", cc.local, "peer", cc.peer, "err", err)
			}
		}
	}
	nw.cutConnects = keep
}

// flushAcks runs before a partition's firewall goes up. A receiver
// acknowledges data up to 40 ms of real time after it arrived (delayed
// ACK); cut before then, the ACK is lost, the sender retransmits on its
// real-time timer, and after the heal that retransmission (or, from a peer
// that crashed meanwhile, the RST it draws) comes at a moment no schedule
// fixes: the same seed saw a member's stale connections reset before its
// next poll in one run and after it in another. So every connection the
// cut crosses with bytes not acknowledged yet is made to acknowledge them
// now (TCP_QUICKACK on lockstep's duplicate of the receiving socket), and
// the ACKs are waited for.
//
// Precondition: runs on the tracer thread.
func (nw *network) flushAcks(cutting *netcut.Set[netip.Addr]) {
	type owed struct {
		d             *sockdiag.Sock
		local, remote netip.AddrPort
	}
	var waiting []owed
	for _, name := range nw.pt.nodeNames() {
		ni := nw.pt.nodeNamed(name)
		d, err := ni.diagFor()
		if err != nil {
			continue
		}
		conns, err := d.TCP()
		if err != nil {
			continue
		}
		for _, c := range conns {
			if !stops(cutting, c.Local, c.Remote) {
				continue
			}
			if s, err := d.Sending(c.Local, c.Remote); err != nil || s.Unacked == 0 {
				continue
			}
			if fd := nw.pt.sockDup(c.Remote, c.Local); fd >= 0 {
				unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
			}
			waiting = append(waiting, owed{d, c.Local, c.Remote})
		}
	}
	for i := 0; len(waiting) > 0 && i < arrivalPolls; i++ {
		keep := waiting[:0]
		for _, w := range waiting {
			if s, err := w.d.Sending(w.local, w.remote); err == nil && s.Unacked > 0 {
				keep = append(keep, w)
			}
		}
		waiting = keep
		if len(waiting) > 0 {
			unix.Nanosleep(&unix.Timespec{Nsec: 10000}, nil)
		}
	}
	nw.stats.AcksLate += uint64(len(waiting))
}

// resetSock aborts the connection a reset fault chose, as a middlebox's RST
// would: the node's socket is destroyed through sock_diag (it sees
// ECONNABORTED; the kernel sends an RST, so the peer sees ECONNRESET), and
// the bytes lockstep holds in flight on it, either way, are lost. It waits
// until the RST reached the peer, so what the peer's next call sees does
// not depend on timing.
//
// Precondition: runs on the tracer thread.
func (nw *network) resetSock(object string) error {
	socks := nw.pt.socks()
	i := slices.IndexFunc(socks, func(s Sock) bool { return s.Object == object })
	if i < 0 {
		return fmt.Errorf("reset: no connected socket %s", object)
	}
	s := socks[i]
	ni := nw.pt.nodeNamed(s.Node)
	localS, peerS, _ := strings.Cut(s.Conn, ">")
	local, err1 := netip.ParseAddrPort(localS)
	peer, err2 := netip.ParseAddrPort(peerS)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("reset: bad connection %q", s.Conn)
	}
	for _, key := range []string{s.Conn, peerS + ">" + localS} {
		c := nw.conns[key]
		if c == nil {
			continue
		}
		for _, p := range c.queue {
			nw.ops.dropPending(p)
		}
		c.queue, c.queued, c.blocked = nil, 0, false
		// Its FIN, if a partition held it, is moot.
		nw.finsHeld = slices.DeleteFunc(nw.finsHeld, func(x *conn) bool { return x == c })
		if c.closing {
			nw.closeConn(c)
		}
	}
	d, err := ni.diagFor()
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if err := d.Destroy(local, peer); err != nil {
		if err == sockdiag.ErrNoSocket {
			return nil // closed meanwhile: nothing left to reset
		}
		return fmt.Errorf("reset %s: %w", s.Conn, err)
	}
	nw.stats.Resets++
	if pn := nw.pt.nodeAt(peer.Addr()); pn != nil {
		nw.finWaits = append(nw.finWaits, finWait{node: pn, local: peer, remote: local, until: time.Now().Add(finWaitLimit)})
	}
	return nil
}
