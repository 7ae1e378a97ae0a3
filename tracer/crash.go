package tracer

import (
	"maps"
	"slices"
)

// crashNode kills every process of a node and drops what they sent that
// lockstep has not delivered: a crashed host's unsent bytes never reach
// the wire. The kernel then closes the node's sockets, so peers see the end
// of their connections as after a process crash; lockstep's duplicates of
// those sockets close now (across a partition, at its heal), and the FINs
// they send are waited for like any other. It returns once the processes
// are reaped, so the next state reports their exits and none of their ops.
//
// Precondition: runs on the tracer thread.
func (t *Tracer) crashNode(name string) {
	ni := t.pt.nodes[name]
	if ni == nil {
		return
	}
	// In a fixed order: the FINs leave in the order the duplicates close,
	// and a peer's epoll reports the connections' ends in that order. A
	// connection across a partition keeps its duplicate until the heal,
	// which sends its FIN (maybeFinishConn): sent now, the firewall would
	// drop it and the kernel retransmit it after the heal whenever its
	// real-time timer said.
	for _, key := range slices.Sorted(maps.Keys(t.net.conns)) {
		c := t.net.conns[key]
		if c.src.Addr().Unmap() != ni.addr || c.dup < 0 {
			continue
		}
		c.closing = true
		t.net.dropQueue(c)
		t.net.maybeFinishConn(c)
	}
	for _, p := range t.ops.pending {
		if p.chunk != nil && p.chunk.dg != nil && p.op.Node == name {
			t.net.dropDgram(p) // a dead host's unsent datagrams are lost too
		}
	}
	if n := t.killAndReap(func(p *process) bool { return p.node == ni }); n > 0 {
		t.log.Warn("crashed node's processes still alive", "node", name, "processes", n)
	}
}
