package tracer

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// conn is one direction of a TCP connection whose sends lockstep captured:
// the bytes wait here, in order, until their deliver ops are released.
type conn struct {
	key      string // "sender local>sender peer"
	src, dst netip.AddrPort
	// dup is lockstep's duplicate of the sender's socket; it keeps the
	// connection open past the tracee's close until the queue is empty, so
	// the FIN follows the data as TCP would order it.
	dup     int
	queue   []*pendingOp
	queued  int
	sent    uint64 // bytes delivered so far
	closing bool   // the tracee closed its fd
	shutWr  bool   // the tracee shut down writing
	blocked bool   // the last delivery hit a full send buffer
	// delivered are ranges delivered but not yet consumed by a recv,
	// so a recv can name the deliveries it read.
	delivered []deliveredRange
	consumed  uint64
}

type deliveredRange struct {
	start, end uint64
	id         uint64
}

// chunk is the payload of one deliver op: bytes of a connection's stream,
// or one datagram.
type chunk struct {
	data   []byte
	conn   *conn  // a stream's
	dg     *dgram // a datagram's
	sendID uint64
}

// maxCapture bounds one captured send; a stream send may legally be partial.
const maxCapture = 1 << 20

// capture copies a send's bytes out of the tracee and queues a deliver op.
func (t *Tracer) capture(p *pendingOp) (int64, error) {
	fi := p.fi
	if fi.dup < 0 || !fi.peer.IsValid() {
		return 0, errors.New("socket not connected")
	}
	data, err := t.payload(p)
	if err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, nil
	}
	key := fi.outKey()
	c := t.conns[key]
	if c == nil || c.dup < 0 {
		// New, or the 4-tuple of a closed connection reused.
		d, err := unix.Dup(fi.dup)
		if err != nil {
			return 0, err
		}
		unix.CloseOnExec(d)
		c = &conn{key: key, dup: d, src: fi.local, dst: fi.peer}
		t.conns[key] = c
	}
	t.seq++
	d := &pendingOp{seq: t.seq, fd: -1, deadline: -1, chunk: &chunk{data: data, conn: c, sendID: p.op.ID}}
	d.op = sched.Op{
		Node: p.op.Node, LPID: p.op.LPID, Kind: sched.Deliver, Site: p.op.Site,
		Object: t.inbox(fi.peer.Addr()), Peer: fi.peer.String(), Conn: key, Bytes: len(data),
		Syscall: "deliver",
	}
	d.causes = []uint64{p.op.ID}
	c.queue = append(c.queue, d)
	c.queued += len(data)
	t.fresh = append(t.fresh, d)
	return int64(len(data)), nil
}

// payload copies the bytes a send would send out of the tracee.
func (t *Tracer) payload(p *pendingOp) ([]byte, error) {
	th, a := p.th, p.args
	switch p.nr {
	case unix.SYS_WRITE, unix.SYS_SENDTO:
		data := make([]byte, min(a[2], maxCapture))
		if err := ptrace.ReadMem(th.tid, a[1], data); err != nil {
			return nil, err
		}
		return data, nil
	case unix.SYS_WRITEV:
		return gather(th.tid, a[1], a[2])
	case unix.SYS_SENDMSG:
		var hdr [56]byte
		if err := ptrace.ReadMem(th.tid, a[1], hdr[:]); err != nil {
			return nil, err
		}
		iov := binary.LittleEndian.Uint64(hdr[16:])
		iovlen := binary.LittleEndian.Uint64(hdr[24:])
		controllen := binary.LittleEndian.Uint64(hdr[40:])
		if controllen != 0 {
			return nil, errors.New("sendmsg with ancillary data")
		}
		return gather(th.tid, iov, iovlen)
	}
	return nil, errors.New("unsupported send syscall")
}

func gather(pid int, iovAddr, iovcnt uint64) ([]byte, error) {
	if iovcnt > 1024 {
		return nil, errors.New("too many iovecs")
	}
	raw := make([]byte, 16*iovcnt)
	if err := ptrace.ReadMem(pid, iovAddr, raw); err != nil {
		return nil, err
	}
	var out []byte
	for i := uint64(0); i < iovcnt; i++ {
		base := binary.LittleEndian.Uint64(raw[16*i:])
		l := binary.LittleEndian.Uint64(raw[16*i+8:])
		if uint64(len(out))+l > maxCapture {
			l = maxCapture - uint64(len(out))
		}
		if l == 0 {
			continue
		}
		b := make([]byte, l)
		if err := ptrace.ReadMem(pid, base, b); err != nil {
			return nil, err
		}
		out = append(out, b...)
		if len(out) >= maxCapture {
			break
		}
	}
	return out, nil
}

// deliver writes a queued chunk into the real connection.
func (t *Tracer) deliver(p *pendingOp) (Released, error) {
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
		r.Result = -int64(err.(unix.Errno))
		t.maybeFinishConn(c)
		return r, nil
	}
	t.stats.Deliveries++
	r.Result = int64(n)
	if n > 0 {
		c.delivered = append(c.delivered, deliveredRange{start: c.sent, end: c.sent + uint64(n), id: p.op.ID})
		c.sent += uint64(n)
		t.awaitArrival(c)
	}
	if n < len(p.chunk.data) {
		// The rest waits for room: it becomes a new op at the head.
		c.blocked = true
		t.seq++
		rest := &pendingOp{seq: t.seq, fd: -1, deadline: -1, chunk: &chunk{data: p.chunk.data[n:], conn: c, sendID: p.chunk.sendID}}
		rest.op = p.op
		rest.op.ID = 0
		rest.op.Bytes = len(rest.chunk.data)
		rest.causes = p.causes
		c.queue = append([]*pendingOp{rest}, c.queue...)
		c.queued += len(rest.chunk.data)
		t.fresh = append(t.fresh, rest)
	} else {
		c.blocked = false
	}
	t.maybeFinishConn(c)
	return r, nil
}

// arrivalPolls bounds the wait for delivered bytes to reach the receiver
// (each poll is one exact sock_diag lookup, a few µs).
const arrivalPolls = 2000

// awaitArrival waits until bytes written into the sender's socket sit in
// the receiving socket. Between namespaces they cross veth and bridge in
// softirq context, possibly on another CPU: without this wait, whether the
// receiver's recv or poll is enabled right after a delivery would depend on
// timing, and the same seed could give another schedule.
func (t *Tracer) awaitArrival(c *conn) {
	ni := t.byAddr[c.dst.Addr().Unmap()]
	if ni == nil || !c.src.IsValid() {
		return
	}
	d, err := t.diagFor(ni)
	if err != nil {
		return
	}
	want := c.sent - c.consumed
	for i := 0; i < arrivalPolls; i++ {
		rq, err := d.RQueue(c.dst, c.src)
		if err != nil {
			return // gone, or not a socket sock_diag can see
		}
		if uint64(rq) >= want {
			t.stats.ArrivalPolls += i
			return
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10000}, nil)
	}
	t.stats.ArrivalsLate++
	t.log.Debug("delivered bytes did not arrive", "conn", c.key, "want", want)
}

// diagFor returns the sock_diag socket in the node's network namespace.
func (t *Tracer) diagFor(ni *nodeInfo) (*sockdiag.Sock, error) {
	if ni.diag != nil {
		return ni.diag, nil
	}
	d, err := sockdiag.Open(ni.netns)
	if err != nil {
		return nil, err
	}
	ni.diag = d
	return d, nil
}

// maybeFinishConn applies a deferred shutdown or close once the queue is
// empty.
func (t *Tracer) maybeFinishConn(c *conn) {
	if len(c.queue) > 0 {
		return
	}
	if (c.shutWr || c.closing) && t.cut[[2]netip.Addr{c.src.Addr().Unmap(), c.dst.Addr().Unmap()}] {
		if !slices.Contains(t.finsHeld, c) {
			t.finsHeld = append(t.finsHeld, c)
		}
		return
	}
	if c.shutWr {
		unix.Shutdown(c.dup, unix.SHUT_WR)
		c.shutWr = false
	}
	if c.closing {
		t.closeConn(c)
	}
}

func (t *Tracer) closeConn(c *conn) {
	for _, p := range c.queue {
		t.dropPending(p)
	}
	c.queue = nil
	if c.dup >= 0 {
		unix.Close(c.dup)
		c.dup = -1
		if c.closing {
			// The tracee closed first; this was the last holder.
			t.expectFin(c.src, c.dst)
		}
	}
	// What was delivered but not yet read still names its sends: the
	// receiver's recvs need it for their causes, past the sender's close.
	if len(c.delivered) == 0 {
		delete(t.conns, c.key)
	}
}

// consume works out which deliveries a recv about to run will read: the
// bytes waiting in the socket, up to the amount asked for.
func (t *Tracer) consume(p *pendingOp) []uint64 {
	c := t.conns[p.fi.inKey()]
	if c == nil || p.fi.dup < 0 {
		return nil
	}
	avail, err := unix.IoctlGetInt(p.fi.dup, unix.SIOCINQ)
	if err != nil || avail <= 0 {
		return nil
	}
	want := uint64(avail)
	if p.op.Bytes > 0 && uint64(p.op.Bytes) < want {
		want = uint64(p.op.Bytes)
	}
	peek := false
	switch p.nr {
	case unix.SYS_RECVFROM:
		peek = p.args[3]&unix.MSG_PEEK != 0
	case unix.SYS_RECVMSG:
		peek = p.args[2]&unix.MSG_PEEK != 0
	}
	from, to := c.consumed, c.consumed+want
	var ids []uint64
	keep := c.delivered[:0]
	for _, d := range c.delivered {
		if d.end > from && d.start < to {
			ids = append(ids, d.id)
		}
		if peek || d.end > to {
			keep = append(keep, d)
		}
	}
	if !peek {
		c.delivered = keep
		c.consumed = to
		if c.dup < 0 && len(keep) == 0 {
			delete(t.conns, c.key) // closed and all read
		}
	}
	return ids
}

func (t *Tracer) popConnect(listener string) uint64 {
	q := t.connects[listener]
	if len(q) == 0 {
		return 0
	}
	id := q[0]
	t.connects[listener] = q[1:]
	return id
}

// applyCut records a partition or its heal; a heal sends the FINs held
// across it (see Cut).
//
// Precondition: runs on the tracer thread.
func (t *Tracer) applyCut(c Cut) {
	if t.cut == nil {
		t.cut = map[[2]netip.Addr]bool{}
	}
	for _, a := range c.A {
		for _, b := range c.B {
			for _, pair := range [][2]netip.Addr{{a.Unmap(), b.Unmap()}, {b.Unmap(), a.Unmap()}} {
				if c.Heal {
					delete(t.cut, pair)
				} else {
					t.cut[pair] = true
				}
			}
		}
	}
	if !c.Heal {
		return
	}
	held := t.finsHeld
	t.finsHeld = nil
	for _, conn := range held {
		t.maybeFinishConn(conn)
	}
}
