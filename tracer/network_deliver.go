package tracer

import (
	"encoding/binary"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"time"

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
	// movingSince is when held bytes (see flowHeld) were first seen
	// moving again, zero while they are not.
	movingSince time.Time
	// owed is a recv with MSG_WAITALL asleep in the kernel until bytes up
	// to owedUntil arrive: the deliveries that bring them are its causes
	// too (Released.Completes). Zero when none waits.
	owed      uint64
	owedUntil uint64
	// acked: the sending socket had every byte delivered acknowledged
	// after the last delivery, so the unread ones sit in the receiving
	// socket (see unread).
	acked bool
}

type deliveredRange struct {
	start, end uint64
	id         uint64
	// head is the range's first bytes (up to Options.Data), so a recv can
	// say what it read.
	head []byte
}

// head copies the first Options.Data bytes of b: what a record keeps of
// a message. Nil when the spec keeps none.
func (nw *network) head(b []byte) []byte {
	if nw.opts.Data <= 0 || len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b[:min(len(b), nw.opts.Data)]...)
}

// chunk is the payload of one deliver op: bytes of a connection's stream,
// or one datagram.
type chunk struct {
	data []byte
	// buf is the pooled buffer data lies in (see bufPool), returned once
	// every byte of it was delivered; nil when data is not pooled.
	buf    []byte
	conn   *conn  // a stream's
	dg     *dgram // a datagram's
	sendID uint64
}

// maxCapture bounds one captured send; a stream send may legally be partial.
const maxCapture = 1 << 20

// freshData is the head of the message the last capture queued: what a
// captured send sent.
func (nw *network) freshData() []byte {
	if n := len(nw.ops.fresh); n > 0 && nw.ops.fresh[n-1].chunk != nil {
		return nw.head(nw.ops.fresh[n-1].chunk.data)
	}
	return nil
}

// capture copies a send's bytes out of the tracee and queues a deliver op.
func (nw *network) capture(p *pendingOp) (int64, error) {
	fi := p.fi
	if fi.dup < 0 || !fi.peer.IsValid() {
		return 0, errors.New("socket not connected")
	}
	data, err := nw.payload(p)
	if err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, nil
	}
	key := fi.outKey()
	c := nw.conns[key]
	if c == nil || c.dup < 0 {
		// New, or the 4-tuple of a closed connection reused.
		d, err := unix.Dup(fi.dup)
		if err != nil {
			return 0, err
		}
		unix.CloseOnExec(d)
		c = &conn{key: key, dup: d, src: fi.local, dst: fi.peer}
		nw.conns[key] = c
	}
	nw.ops.seq++
	d := &pendingOp{seq: nw.ops.seq, fd: -1, deadline: -1, chunk: &chunk{data: data, buf: data, conn: c, sendID: p.op.ID}}
	d.op = sched.Op{
		Node: p.op.Node, LPID: p.op.LPID, Thread: p.op.Thread, Kind: sched.Deliver, Site: p.op.Site,
		Object: nw.pt.inbox(fi.peer.Addr()), Peer: fi.peer.String(), Conn: key, Bytes: len(data),
		Syscall: "deliver",
	}
	if nw.opts.MatchBytes > 0 {
		d.op.Msg = string(data[:min(len(data), nw.opts.MatchBytes)])
	}
	d.causes = []uint64{p.op.ID}
	c.queue = append(c.queue, d)
	c.queued += len(data)
	nw.ops.fresh = append(nw.ops.fresh, d)
	return int64(len(data)), nil
}

// payload copies the bytes a send would send out of the tracee, into a
// buffer of t.bufs.
func (nw *network) payload(p *pendingOp) ([]byte, error) {
	th, a := p.th, p.args
	switch p.nr {
	case unix.SYS_WRITE, unix.SYS_SENDTO:
		data := nw.bufs.get(int(min(a[2], maxCapture)))
		if err := ptrace.ReadMem(th.tid, a[1], data); err != nil {
			nw.bufs.put(data)
			return nil, err
		}
		return data, nil
	case unix.SYS_WRITEV:
		return nw.gather(th.tid, a[1], a[2])
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
		return nw.gather(th.tid, iov, iovlen)
	}
	return nil, errors.New("unsupported send syscall")
}

// gather copies the bytes an iovec array names (up to maxCapture) in one
// read.
func (nw *network) gather(pid int, iovAddr, iovcnt uint64) ([]byte, error) {
	if iovcnt > 1024 {
		return nil, errors.New("too many iovecs")
	}
	raw := make([]byte, 16*iovcnt)
	if err := ptrace.ReadMem(pid, iovAddr, raw); err != nil {
		return nil, err
	}
	segs := make([]unix.RemoteIovec, 0, iovcnt)
	total := 0
	for i := uint64(0); i < iovcnt && total < maxCapture; i++ {
		base := binary.LittleEndian.Uint64(raw[16*i:])
		l := min(binary.LittleEndian.Uint64(raw[16*i+8:]), uint64(maxCapture-total))
		if l == 0 {
			continue
		}
		segs = append(segs, unix.RemoteIovec{Base: uintptr(base), Len: int(l)})
		total += int(l)
	}
	out := nw.bufs.get(total)
	if err := ptrace.ReadMemVec(pid, out, segs); err != nil {
		nw.bufs.put(out)
		return nil, err
	}
	return out, nil
}

// bufPool keeps capture buffers for reuse. A bulk transfer captures and
// delivers its bytes in chunks of up to maxCapture; allocating (and
// zeroing) each anew kept the garbage collector busy on the tracer thread:
// the release of a 64 KiB send took 200-350 µs, 20-70 µs with the pool.
type bufPool struct {
	free  [poolClasses][][]byte // by size class: poolMin << class
	bytes int                   // what free holds
}

const (
	poolMin     = 16 << 10 // smaller buffers are allocated each time
	poolClasses = 7        // up to poolMin<<6 = maxCapture
	poolLimit   = 8 << 20  // most bytes kept
)

func poolClass(n int) int {
	c := 0
	for poolMin<<c < n {
		c++
	}
	return c
}

// get returns a buffer of length n, its contents undefined.
func (bp *bufPool) get(n int) []byte {
	if n < poolMin || n > poolMin<<(poolClasses-1) {
		return make([]byte, n)
	}
	c := poolClass(n)
	if l := len(bp.free[c]); l > 0 {
		b := bp.free[c][l-1]
		bp.free[c][l-1] = nil
		bp.free[c] = bp.free[c][:l-1]
		bp.bytes -= cap(b)
		return b[:n]
	}
	return make([]byte, n, poolMin<<c)
}

// put takes back a buffer get returned, once nothing refers to it.
func (bp *bufPool) put(b []byte) {
	n := cap(b)
	if n < poolMin || n > poolMin<<(poolClasses-1) || poolMin<<poolClass(n) != n || bp.bytes+n > poolLimit {
		return
	}
	c := poolClass(n)
	bp.free[c] = append(bp.free[c], b[:0])
	bp.bytes += n
}

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
		nw.netGen++
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
			nw.netGen++
		}
	}
	if n < len(p.chunk.data) {
		// The rest waits for room: it becomes a new op at the head.
		c.blocked = true
		nw.ops.seq++
		rest := &pendingOp{seq: nw.ops.seq, fd: -1, deadline: -1, chunk: &chunk{data: p.chunk.data[n:], buf: p.chunk.buf, conn: c, sendID: p.chunk.sendID}}
		rest.op = p.op
		rest.op.ID = 0
		rest.op.Bytes = len(rest.chunk.data)
		rest.causes = p.causes
		c.queue = append([]*pendingOp{rest}, c.queue...)
		c.queued += len(rest.chunk.data)
		nw.ops.fresh = append(nw.ops.fresh, rest)
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
	rn := nw.pt.byAddr[c.dst.Addr().Unmap()]
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

// arrivalPolls bounds the wait for a datagram to reach its receiver, and
// for ACKs owed across a partition about to be cut (each poll a few µs):
// a datagram may be dropped (a full receive buffer) and an ACK lost, with
// nothing to tell, so these waits stay short.
const arrivalPolls = 2000

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
	rn := nw.pt.byAddr[c.dst.Addr().Unmap()]
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
	if sn := nw.pt.byAddr[c.src.Addr().Unmap()]; sn != nil {
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
		nw.netGen++
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
	if nw.cut[[2]netip.Addr{c.src.Addr().Unmap(), c.dst.Addr().Unmap()}] {
		return flowArrived // the partition drops them: nothing comes back
	}
	if reset(c.dup) {
		return flowArrived // the reset came back already
	}
	sn := nw.pt.byAddr[c.src.Addr().Unmap()]
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
		if nw.cut[[2]netip.Addr{c.src.Addr().Unmap(), c.dst.Addr().Unmap()}] {
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

// diagFor returns the sock_diag socket in the node's network namespace.
func (ni *nodeInfo) diagFor() (*sockdiag.Sock, error) {
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
func (nw *network) maybeFinishConn(c *conn) {
	if len(c.queue) > 0 {
		return
	}
	if (c.shutWr || c.closing) && nw.cut[[2]netip.Addr{c.src.Addr().Unmap(), c.dst.Addr().Unmap()}] {
		if !slices.Contains(nw.finsHeld, c) {
			nw.finsHeld = append(nw.finsHeld, c)
		}
		return
	}
	if c.shutWr {
		unix.Shutdown(c.dup, unix.SHUT_WR)
		c.shutWr = false
		nw.netGen++ // a FIN
	}
	if c.closing {
		nw.closeConn(c)
	}
}

// dropQueue drops the bytes waiting for delivery on c.
func (nw *network) dropQueue(c *conn) {
	for _, p := range c.queue {
		nw.ops.dropPending(p)
	}
	c.queue = nil
}

func (nw *network) closeConn(c *conn) {
	nw.netGen++ // a FIN, or a reset
	nw.dropQueue(c)
	if c.dup >= 0 {
		unix.Close(c.dup)
		c.dup = -1
		if c.closing {
			// The tracee closed first; this was the last holder.
			nw.expectFin(c.src, c.dst)
		}
	}
	// What was delivered but not yet read still names its sends: the
	// receiver's recvs need it for their causes, past the sender's close.
	if len(c.delivered) == 0 {
		delete(nw.conns, c.key)
	}
}

// unread returns the bytes waiting in the socket a recv reads from when
// lockstep knows them without asking the kernel: every byte that came
// on the connection is one it delivered (none was sent natively), and
// all it delivered arrived (acked). ok is false otherwise, or when none
// are known to wait.
func (nw *network) unread(p *pendingOp) (n int, ok bool) {
	if p.fi == nil || p.fi.dup < 0 || p.fi.sockType != unix.SOCK_STREAM {
		return 0, false
	}
	key := p.fi.inKey()
	c := nw.conns[key]
	if c == nil || !c.acked || nw.nativeSends[key] || c.sent <= c.consumed {
		return 0, false
	}
	return int(c.sent - c.consumed), true
}

// consume works out which deliveries a recv about to run will read: the
// bytes waiting in the socket, up to the amount asked for.
func (nw *network) consume(p *pendingOp, avail int) ([]uint64, []byte) {
	if p.fi == nil || avail <= 0 {
		return nil, nil
	}
	c := nw.conns[p.fi.inKey()]
	if c == nil || p.fi.dup < 0 {
		return nil, nil
	}
	want := uint64(avail)
	room, known := p.recvRoom()
	if known && room < want {
		want = room
	}
	var flags uint64
	switch p.nr {
	case unix.SYS_RECVFROM:
		flags = p.args[3]
	case unix.SYS_RECVMSG:
		flags = p.args[2]
	}
	peek := flags&unix.MSG_PEEK != 0
	if known && want < room && flags&unix.MSG_WAITALL != 0 && !peek && !p.immediate && p.deadline < 0 {
		// It sleeps in the kernel until room bytes came: the rest is read
		// by this recv too, not by the next one.
		c.owed, c.owedUntil = p.op.ID, c.consumed+room
		want = room
	}
	from, to := c.consumed, c.consumed+want
	var ids []uint64
	var data []byte
	whole := true // data holds every byte read so far
	keep := c.delivered[:0]
	for _, d := range c.delivered {
		if d.end > from && d.start < to {
			ids = append(ids, d.id)
			if whole && len(data) < nw.opts.Data {
				// The bytes of this range the recv reads, as far as its
				// head holds them.
				lo, hi := max(from, d.start)-d.start, min(to, d.end)-d.start
				if lo < uint64(len(d.head)) {
					data = append(data, d.head[lo:min(hi, uint64(len(d.head)))]...)
				}
				whole = hi <= uint64(len(d.head))
			}
		}
		if peek || d.end > to {
			keep = append(keep, d)
		}
	}
	if !peek {
		c.delivered = keep
		c.consumed = to
		if c.dup < 0 && len(keep) == 0 {
			delete(nw.conns, c.key) // closed and all read
		}
	}
	if len(data) > nw.opts.Data {
		data = data[:nw.opts.Data]
	}
	return ids, data
}

// recvRoom says how many bytes a recv about to run can take: its buffer's
// size, or for readv and recvmsg the sum of its iovecs' (read from the
// stopped tracee: counting everything waiting instead made a server
// reading pipelined commands into small buffers seem to read them all).
func (p *pendingOp) recvRoom() (uint64, bool) {
	a := p.args
	iov, iovcnt := a[1], a[2]
	switch p.nr {
	case unix.SYS_READ, unix.SYS_RECVFROM:
		return a[2], true
	case unix.SYS_READV:
	case unix.SYS_RECVMSG:
		var hdr [32]byte
		if err := ptrace.ReadMem(p.th.tid, a[1], hdr[:]); err != nil {
			return 0, false
		}
		iov = binary.LittleEndian.Uint64(hdr[16:])
		iovcnt = binary.LittleEndian.Uint64(hdr[24:])
	default:
		return 0, false
	}
	if iovcnt > 1024 { // UIO_MAXIOV: the call fails with EINVAL
		return 0, true
	}
	raw := make([]byte, 16*iovcnt)
	if err := ptrace.ReadMem(p.th.tid, iov, raw); err != nil {
		return 0, false
	}
	var n uint64
	for i := uint64(0); i < iovcnt; i++ {
		n += binary.LittleEndian.Uint64(raw[16*i+8:])
	}
	return n, true
}

func (nw *network) popConnect(listener string) uint64 {
	q := nw.connects[listener]
	if len(q) == 0 {
		return 0
	}
	id := q[0]
	nw.connects[listener] = q[1:]
	return id
}

// applyCut records a partition or its heal; a heal sends the FINs held
// across it (see Cut).
//
// Precondition: runs on the tracer thread.
func (nw *network) applyCut(c Cut) error {
	if nw.cut == nil {
		nw.cut = map[[2]netip.Addr]bool{}
	}
	pairs := func(f func([2]netip.Addr)) {
		for _, a := range c.A {
			for _, b := range c.B {
				f([2]netip.Addr{a.Unmap(), b.Unmap()})
				if !c.OneWay {
					f([2]netip.Addr{b.Unmap(), a.Unmap()})
				}
			}
		}
	}
	if !c.Heal {
		cutting := map[[2]netip.Addr]bool{}
		pairs(func(p [2]netip.Addr) { cutting[p] = true })
		nw.flushAcks(func(a, b netip.Addr) bool { return cutting[[2]netip.Addr{a, b}] })
		if c.Close != nil {
			if err := c.Close(); err != nil {
				return err
			}
		}
		pairs(func(p [2]netip.Addr) { nw.cut[p] = true })
		return nil
	}
	// A connect either way across a one-way cut was one into it.
	healed := map[[2]netip.Addr]bool{}
	pairs(func(p [2]netip.Addr) { healed[p], healed[[2]netip.Addr{p[1], p[0]}] = true, true })
	nw.abortCutConnects(healed)
	if c.Open != nil {
		if err := c.Open(); err != nil {
			return err
		}
	}
	pairs(func(p [2]netip.Addr) { delete(nw.cut, p) })
	held := nw.finsHeld
	nw.finsHeld = nil
	for _, conn := range held {
		nw.maybeFinishConn(conn)
	}
	return nil
}

// cutBetween reports whether a cut in force stops a connection between a
// and b from opening: its handshake needs both ways.
func (nw *network) cutBetween(a, b netip.Addr) bool {
	return nw.cut[[2]netip.Addr{a, b}] || nw.cut[[2]netip.Addr{b, a}]
}

// cutConnect is a non-blocking connect released into a partition.
type cutConnect struct {
	node        *nodeInfo
	local, peer netip.AddrPort
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
func (nw *network) abortCutConnects(healed map[[2]netip.Addr]bool) {
	keep := nw.cutConnects[:0]
	for _, cc := range nw.cutConnects {
		if !healed[[2]netip.Addr{cc.local.Addr().Unmap(), cc.peer.Addr().Unmap()}] {
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
func (nw *network) flushAcks(crosses func(a, b netip.Addr) bool) {
	type owed struct {
		d             *sockdiag.Sock
		local, remote netip.AddrPort
	}
	var waiting []owed
	for _, name := range slices.Sorted(maps.Keys(nw.pt.nodes)) {
		ni := nw.pt.nodes[name]
		d, err := ni.diagFor()
		if err != nil {
			continue
		}
		conns, err := d.TCP()
		if err != nil {
			continue
		}
		for _, c := range conns {
			if !crosses(c.Local.Addr().Unmap(), c.Remote.Addr().Unmap()) {
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
