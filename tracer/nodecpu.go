package tracer

import (
	"bytes"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// Quiescence looks at every thread lockstep let run and finds out from
// /proc whether it sleeps in the kernel: two reads per thread, twice per
// decision (the second to confirm that nothing ran in between). A JVM has
// dozens of threads parked in futex waits lockstep does not track; on a
// four-JVM cluster those reads were over half of lockstep's own time. A
// node's cgroup counts the CPU time of all its threads: when it has not
// moved since the node's threads were last seen asleep, none of them ran,
// and none can have woken without running (a thread woken but not yet run
// shows at the confirmation, after the pause that lets it run). So only
// the threads of nodes whose count moved are read again, and the
// confirmation compares one count per node.

// nodeCPU is what quiescence keeps per node (see above).
type nodeCPU struct {
	// fd is the node's cgroup cpu.stat, open; 0 (-1 once closed) when the
	// node has none (its threads are then always read one by one).
	fd int
	// usage is the count read at the current check (ok: it could be).
	usage uint64
	ok    bool
	// asleepAt is a count read before a check that found every thread of
	// the node lockstep let run asleep; asleepOK says it still stands:
	// nothing lockstep did since could have woken one (see stir).
	asleepAt uint64
	asleepOK bool
}

// openCPUStat opens the node's cgroup cpu.stat on its first launch.
func (ni *nodeInfo) openCPUStat(cgroup string) {
	if ni.cpu.fd > 0 || cgroup == "" {
		return
	}
	fd, err := unix.Open(cgroup+"/cpu.stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	ni.cpu.fd = fd
}

func (ni *nodeInfo) closeCPUStat() {
	if ni.cpu.fd > 0 {
		unix.Close(ni.cpu.fd)
		ni.cpu.fd = -1
	}
}

// readCPU reads the node's CPU time (µs) into ni.cpu.usage.
func (ni *nodeInfo) readCPU() {
	ni.cpu.ok = false
	if ni.cpu.fd <= 0 {
		return
	}
	var buf [256]byte
	n, err := unix.Pread(ni.cpu.fd, buf[:], 0)
	if err != nil || n <= 0 {
		return
	}
	const key = "usage_usec "
	b := buf[:n]
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return
	}
	b = b[i+len(key):]
	if j := bytes.IndexByte(b, '\n'); j >= 0 {
		b = b[:j]
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return
	}
	ni.cpu.usage, ni.cpu.ok = v, true
}

// asleepSince reports whether the node's threads were seen asleep and
// nothing of the node has run since: their /proc reads can be skipped.
func (ni *nodeInfo) asleepSince() bool {
	return ni != nil && ni.cpu.ok && ni.cpu.asleepOK && ni.cpu.usage == ni.cpu.asleepAt
}

// stir forgets that the node's threads were seen asleep: lockstep changed
// one's state, signalled one, or sent the node something that may wake one
// without its count moving yet.
func (ni *nodeInfo) stir() {
	if ni != nil {
		ni.cpu.asleepOK = false
	}
}

// stirAll is stir for every node (faults, launches, clock changes: what
// they wake is not worked out).
func (pt *procTable) stirAll() {
	for _, ni := range pt.nodeList {
		ni.stir()
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
