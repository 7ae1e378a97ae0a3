package tracer

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// maybeFinishConn applies a deferred shutdown or close once the queue is
// empty.
func (nw *network) maybeFinishConn(c *conn) {
	if len(c.queue) > 0 {
		return
	}
	if (c.shutWr || c.closing) && nw.cutStops(c.src, c.dst) {
		if !slices.Contains(nw.finsHeld, c) {
			nw.finsHeld = append(nw.finsHeld, c)
		}
		return
	}
	if c.shutWr {
		unix.Shutdown(c.dup, unix.SHUT_WR)
		c.shutWr = false
		nw.invalidate() // a FIN
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
	nw.invalidate() // a FIN, or a reset
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
	var flags uint64 // recvmmsg's are not looked at: its room is unknown
	if p.call.nr == unix.SYS_RECVFROM || p.call.nr == unix.SYS_RECVMSG {
		flags = p.call.flags
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
	iov, iovcnt := p.call.buf, p.call.n
	switch p.call.nr {
	case unix.SYS_READ, unix.SYS_RECVFROM:
		return p.call.n, true
	case unix.SYS_READV:
	case unix.SYS_RECVMSG:
		var hdr [32]byte
		if err := ptrace.ReadMem(p.th.tid, p.call.buf, hdr[:]); err != nil {
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

// releaseDup closes lockstep's duplicate unless a connection still needs it
// to deliver queued bytes.
func (nw *network) releaseDup(fi *fdInfo) {
	if fi == nil {
		return
	}
	nw.invalidate() // the socket may close: a FIN, or a reset
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
	nw.bindNext(ni, fi, &ni.ports, firstEphemeral, lastEphemeral)
}

// bindLocal binds an unbound socket about to connect within its node (to
// the loopback: no op) to the node's next local port, for the same reason
// and in the same way as bindEphemeral, from a range of its own: a
// connect within a node happens where the schedule has the thread run,
// so its number is the schedule's too.
func (nw *network) bindLocal(ni *nodeInfo, fi *fdInfo) {
	if fi.kind != fdInet || fi.sockType != unix.SOCK_STREAM {
		return
	}
	nw.bindNext(ni, fi, &ni.localPorts, firstLocal, lastLocal)
}

// bindNext binds fi's unbound socket to the port *next counts to in
// first-last, the next one free, and counts on; a bound socket, or one it
// cannot bind, keeps what the kernel gives it.
func (nw *network) bindNext(ni *nodeInfo, fi *fdInfo, next *int, first, last int) {
	if fi.dup < 0 {
		return
	}
	sa, err := unix.Getsockname(fi.dup)
	if err != nil {
		return
	}
	for try := 0; try < 64; try++ {
		port := first + *next%(last-first+1)
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
		*next++
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
	ni := nw.pt.nodeAt(cw.peer.Addr())
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

// expectFin records that closing or shutting down the socket with this
// local and peer address may send a FIN to another node.
func (nw *network) expectFin(local, peer netip.AddrPort) {
	if !peer.IsValid() || !local.IsValid() || local.Port() == 0 {
		return
	}
	ni := nw.pt.nodeAt(peer.Addr())
	if ni == nil {
		return
	}
	nw.stats.FinWaits++
	nw.finWaits = append(nw.finWaits, finWait{
		closer: nw.pt.nodeAt(local.Addr()), node: ni,
		local: peer, remote: local, until: time.Now().Add(finWaitLimit),
	})
}
