package tracer

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
)

// Sock is a connected TCP socket of a node, as a reset fault names it.
type Sock struct {
	Node string
	// Object names it across runs: the logical process that holds it and
	// the descriptor ("sock:db1/0/fd7"). Its ports, which the kernel
	// draws at random, are not part of it.
	Object string
	// Conn is "local>peer", for humans.
	Conn string
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
	ni := nw.pt.nodes[s.Node]
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
	if pn := nw.pt.byAddr[peer.Addr().Unmap()]; pn != nil {
		nw.finWaits = append(nw.finWaits, finWait{node: pn, local: peer, remote: local, until: time.Now().Add(finWaitLimit)})
	}
	return nil
}
