package tracer

import (
	"errors"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
)

// deliver writes a queued chunk into the real connection.
func (nw *network) deliver(p *pendingOp) (Released, error) {
	c := p.chunk.conn
	r := Released{Causes: p.causes}
	if len(c.queue) == 0 || c.queue[0] != p {
		return r, errors.New("delivering out of order on " + c.key)
	}
	c.queue = c.queue[1:]
	c.queued -= len(p.chunk.data)
	n, err := unix.SendmsgN(c.dup, p.chunk.data, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
	if err == unix.EAGAIN {
		n, err = 0, nil
	}
	if err != nil {
		// The connection broke (reset by a crashed peer): the bytes are
		// lost as they would be on a real network; the sender learns of it
		// on its next call.
		nw.invalidate()
		r.Result = -int64(err.(unix.Errno))
		nw.bufs.put(p.chunk.buf)
		nw.maybeFinishConn(c)
		return r, nil
	}
	nw.stats.Deliveries++
	r.Result = int64(n)
	if n > 0 {
		r.Data = nw.head(p.chunk.data[:n])
		c.delivered = append(c.delivered, deliveredRange{start: c.sent, end: c.sent + uint64(n), id: p.op.ID, head: r.Data})
		if c.owed != 0 && c.sent < c.owedUntil {
			r.Completes = c.owed
			if c.sent+uint64(n) >= c.owedUntil {
				c.owed = 0
			}
		}
		c.sent += uint64(n)
		nw.awaitArrival(c)
		if !c.acked {
			// Not known to sit in a live socket: the receiver may be gone
			// and answer with a reset, an error for the sender (known).
			nw.invalidate()
		}
	}
	if n < len(p.chunk.data) {
		// The rest waits for room: it becomes a new op at the head.
		c.blocked = true
		op := p.op
		op.ID, op.Bytes = 0, len(p.chunk.data)-n
		rest := nw.ops.newChunkOp(&chunk{data: p.chunk.data[n:], buf: p.chunk.buf, conn: c, sendID: p.chunk.sendID}, op, p.causes)
		c.queue = append([]*pendingOp{rest}, c.queue...)
		c.queued += len(rest.chunk.data)
	} else {
		c.blocked = false
		nw.bufs.put(p.chunk.buf)
	}
	nw.maybeFinishConn(c)
	return r, nil
}

// roomFor says whether n more bytes may be delivered on c: the bytes
// delivered and not read yet, with them, stay within Options.DeliverCap
// (the receiver's buffer; a delivery into an empty one always fits). The
// cap, not the kernel's buffers, decides, so that it does not depend on
// how far the kernel's autotuning has grown them.
func (nw *network) roomFor(c *conn, n int) bool {
	limit := uint64(nw.opts.DeliverCap)
	if c.consumed >= c.sent || c.sent-c.consumed+uint64(n) <= limit {
		return true // (a recv with MSG_WAITALL has claimed bytes not sent yet)
	}
	// lockstep's count of the bytes read can fall short (a recv with
	// MSG_WAITALL reads on past what was there): ask the receiving socket.
	rn := nw.pt.nodeAt(c.dst.Addr())
	if rn == nil {
		return true
	}
	d, err := rn.diagFor()
	if err != nil {
		return true
	}
	rq, err := d.RQueue(c.dst, c.src)
	return err != nil || rq == 0 || uint64(rq)+uint64(n) <= limit
}

// flow says where the bytes delivered on a connection are.
type flow uint8

const (
	// flowMoving: some are on their way to the receiving socket.
	flowMoving flow = iota
	// flowArrived: all sit in the receiving socket, or were read.
	flowArrived
	// flowHeld: the rest waits in the sending socket because the
	// receiver's window is full; nothing moves until the receiver reads.
	flowHeld
)

// flowOf looks at both ends of c: the receiving socket's queue against the
// bytes delivered and not read, then whether the sending socket holds the
// rest back for want of window.
func (nw *network) flowOf(c *conn) flow {
	rn := nw.pt.nodeAt(c.dst.Addr())
	if rn == nil || !c.src.IsValid() {
		return flowArrived // not a node's: nothing to wait for
	}
	d, err := rn.diagFor()
	if err != nil {
		return flowArrived
	}
	rq, err := d.RQueue(c.dst, c.src)
	if errors.Is(err, sockdiag.ErrNoSocket) {
		return nw.resetFlow(c)
	}
	if err != nil {
		return flowArrived // not a socket sock_diag can see
	}
	if uint64(rq) >= c.sent-c.consumed {
		return flowArrived
	}
	if sn := nw.pt.nodeAt(c.src.Addr()); sn != nil {
		if sd, err := sn.diagFor(); err == nil {
			if s, err := sd.Sending(c.src, c.dst); err == nil && s.WindowFull() {
				return flowHeld
			}
		}
	}
	if reset(c.dup) {
		// The receiver answered with a reset (its socket closed with
		// bytes unread, or gone): the rest is lost, as on a real network.
		// Without this a Redis primary's deliveries to clients that had
		// left were waited for until the polls ran out, 150 ms each.
		nw.invalidate()
		return flowArrived
	}
	return flowMoving
}

// reset reports whether lockstep's duplicate of a sending socket was
// reset: its connection is closed though lockstep still holds it open.
func reset(fd int) bool {
	if fd < 0 {
		return false
	}
	ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	return err == nil && ti.State == tcpClose
}

// resetFlow follows bytes delivered to a socket that is gone: a peer that
// crashed, or restarted, during a partition answers them with an RST, and
// they have "arrived" once it has reset the sending socket. The RST crosses
// the namespaces in softirq as the bytes did; without this wait, whether the
// sender's next poll saw its connection reset depended on timing (etcd
// members writing to a restarted peer after a heal).
func (nw *network) resetFlow(c *conn) flow {
	if nw.cutStops(c.src, c.dst) {
		return flowArrived // the partition drops them: nothing comes back
	}
	if reset(c.dup) {
		return flowArrived // the reset came back already
	}
	sn := nw.pt.nodeAt(c.src.Addr())
	if sn == nil {
		return flowArrived
	}
	sd, err := sn.diagFor()
	if err != nil {
		return flowArrived
	}
	if _, _, err := sd.Lookup(c.src, c.dst); err != nil {
		return flowArrived // reset: the sending socket left the table
	}
	return flowMoving
}

// awaitArrival waits until bytes written into the sender's socket sit in
// the receiving socket, or until the sending socket holds the rest back
// because the receiver's window is full. Between namespaces they cross
// veth and bridge in softirq context, possibly on another CPU: without
// this wait, whether the receiver's recv or poll is enabled right after a
// delivery would depend on timing, and the same seed could give another
// schedule. Held bytes move when the receiver reads: netSettled watches
// them until they have arrived or are held again.
func (nw *network) awaitArrival(c *conn) {
	c.acked = false
	if outq, err := unix.IoctlGetInt(c.dup, unix.SIOCOUTQ); err == nil && outq == 0 {
		c.acked = true
		// The receiver acknowledged every byte sent, and TCP acknowledges
		// bytes only once they sit in the receiving socket. Between
		// namespaces the delivery and its ACK usually cross in the
		// sendmsg's own softirq: one ioctl instead of a sock_diag lookup.
		return
	}
	var w inFlight
	for {
		switch nw.flowOf(c) {
		case flowArrived:
			nw.stats.ArrivalPolls += w.polls
			return
		case flowHeld:
			nw.stats.ArrivalPolls += w.polls
			nw.stats.WindowFull++
			nw.hold(c)
			return
		}
		if !w.again() {
			break
		}
	}
	nw.stats.ArrivalsLate++
	nw.rt.note("delivered bytes late: %s", c.key)
	nw.log.Debug("delivered bytes did not arrive", "conn", c.key, "want", c.sent-c.consumed)
}

// hold records that c's sending socket holds delivered bytes back for want
// of window.
func (nw *network) hold(c *conn) {
	c.movingSince = time.Time{}
	if !slices.Contains(nw.held, c) {
		nw.held = append(nw.held, c)
	}
}

// heldSettled checks the connections whose bytes were held back for want of
// window: a read made room and they are moving, or they have arrived, or
// they are held again. It reports whether none is moving; one that keeps
// moving past finWaitLimit is no longer watched, and one across a
// partition is not waited for.
func (nw *network) heldSettled() bool {
	settled := true
	keep := nw.held[:0]
	for _, c := range nw.held {
		if nw.conns[c.key] != c {
			continue // forgotten: its sockets are gone
		}
		if nw.cutStops(c.src, c.dst) {
			keep = append(keep, c) // nothing crosses a partition: no wait
			continue
		}
		switch nw.flowOf(c) {
		case flowArrived:
			continue
		case flowHeld:
			c.movingSince = time.Time{}
		case flowMoving:
			if c.movingSince.IsZero() {
				c.movingSince = time.Now()
			} else if time.Since(c.movingSince) > finWaitLimit {
				nw.log.Debug("held bytes did not arrive", "conn", c.key, "want", c.sent-c.consumed)
				nw.rt.note("held bytes late: %s", c.key)
				continue
			}
			settled = false
		}
		keep = append(keep, c)
	}
	clear(nw.held[len(keep):])
	nw.held = keep
	return settled
}
