package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// DatagramSyscall marks the deliver op of a UDP datagram (its Syscall),
// which a drop fault may discard.
const DatagramSyscall = "datagram"

// dropDatagram discards the pending datagram deliver op id (a drop fault).
//
// Precondition: runs on the tracer thread.
func (nw *network) dropDatagram(id uint64) error {
	p := nw.ops.pending[id]
	if p == nil || p.chunk == nil || p.chunk.dg == nil {
		return fmt.Errorf("drop: no datagram in flight with id %d", id)
	}
	nw.dropDgram(p)
	nw.stats.Drops++
	return nil
}

// dgramDest is where a send on a datagram socket goes: the address the call
// names, else the socket's peer.
func (th *thread) dgramDest(fi *fdInfo, nr int, a [6]uint64) netip.AddrPort {
	switch nr {
	case unix.SYS_SENDTO:
		if a[4] != 0 {
			_, ap := decodeSockaddr(th.tid, a[4], a[5])
			return ap
		}
	case unix.SYS_SENDMSG:
		var hdr [16]byte
		if ptrace.ReadMem(th.tid, a[1], hdr[:]) == nil {
			if name := binary.LittleEndian.Uint64(hdr[0:]); name != 0 {
				_, ap := decodeSockaddr(th.tid, name, uint64(binary.LittleEndian.Uint32(hdr[8:])))
				return ap
			}
		}
	}
	return fi.peer
}

// dgramGated says whether a datagram socket's call takes part in the
// schedule: a send to a gated address; a receive on a socket connected to
// a gated address, or bound to a node's or the wildcard address (what it
// receives then comes only from lockstep's deliveries).
func (nw *network) dgramGated(th *thread, fi *fdInfo, nr int, a [6]uint64) bool {
	switch nr {
	case unix.SYS_WRITE, unix.SYS_WRITEV, unix.SYS_SENDTO, unix.SYS_SENDMSG:
		d := th.dgramDest(fi, nr, a)
		return d.IsValid() && nw.pt.gated(d.Addr().Unmap())
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_RECVFROM, unix.SYS_RECVMSG, unix.SYS_RECVMMSG:
		if fi.peer.IsValid() {
			return nw.pt.gated(fi.peer.Addr().Unmap())
		}
		if !fi.local.IsValid() || fi.local.Port() == 0 {
			th.proc.refreshSock(-1, fi) // bound since it was classified?
		}
		if !fi.local.IsValid() || fi.local.Port() == 0 {
			return false
		}
		a := fi.local.Addr().Unmap()
		return a.IsUnspecified() || nw.pt.gated(a)
	}
	return false
}

// captureDgram takes a datagram out of the sender and queues its deliver
// op; the send returns its length, as a UDP send does at once.
func (nw *network) captureDgram(p *pendingOp) (int64, error) {
	fi := p.fi
	dst := p.th.dgramDest(fi, p.nr, p.args)
	if fi.dup < 0 || !dst.IsValid() {
		return 0, errors.New("datagram with no destination")
	}
	data, err := nw.payload(p)
	if err != nil {
		return 0, err
	}
	if fi.local.Port() == 0 {
		// Bind now, as the kernel's send would have: the receiver's reply
		// must find the sender's port before lockstep delivers.
		nw.bindEphemeral(p.th.proc.node, fi)
	}
	fd, err := unix.Dup(fi.dup)
	if err != nil {
		return 0, err
	}
	unix.CloseOnExec(fd)
	key := p.th.proc.dgramSource(fi).String() + ">" + dst.String()
	nw.ops.seq++
	d := &pendingOp{seq: nw.ops.seq, fd: -1, deadline: -1, chunk: &chunk{data: data, dg: &dgram{fd: fd, dst: dst}, sendID: p.op.ID}}
	d.op = sched.Op{
		Node: p.op.Node, LPID: p.op.LPID, Thread: p.op.Thread, Kind: sched.Deliver, Site: p.op.Site,
		Object: nw.pt.inbox(dst.Addr()), Peer: dst.String(), Conn: key, Bytes: len(data),
		Syscall: DatagramSyscall,
	}
	d.causes = []uint64{p.op.ID}
	nw.ops.fresh = append(nw.ops.fresh, d)
	return int64(len(data)), nil
}

// dgramSource is the address a datagram leaves from: the socket's, or the
// node's when the socket is bound to the wildcard address.
func (p *process) dgramSource(fi *fdInfo) netip.AddrPort {
	if fi.local.Addr().IsUnspecified() && p.node.addr.IsValid() {
		return netip.AddrPortFrom(p.node.addr, fi.local.Port())
	}
	return fi.local
}

// deliverDgram sends a captured datagram and waits until it sits in the
// receiving socket (so whether the receiver's recv is enabled does not
// depend on timing). Its loss, if the receiver has no socket there, is
// UDP's.
func (nw *network) deliverDgram(p *pendingOp) (Released, error) {
	dg := p.chunk.dg
	r := Released{Causes: p.causes}
	recv := nw.pt.dgramReceiver(dg.dst)
	before := rmemAlloc(recv)
	var to unix.Sockaddr
	if a := dg.dst.Addr().Unmap(); a.Is4() {
		to = &unix.SockaddrInet4{Addr: a.As4(), Port: int(dg.dst.Port())}
	} else {
		to = &unix.SockaddrInet6{Addr: a.As16(), Port: int(dg.dst.Port())}
	}
	err := unix.Sendto(dg.fd, p.chunk.data, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, to)
	unix.Close(dg.fd)
	dg.fd = -1
	if err != nil {
		r.Result = -int64(err.(unix.Errno))
		return r, nil
	}
	nw.stats.Deliveries++
	r.Result = int64(len(p.chunk.data))
	r.Data = nw.head(p.chunk.data)
	if recv >= 0 {
		for i := 0; i < arrivalPolls; i++ {
			if rmemAlloc(recv) != before {
				break
			}
			unix.Nanosleep(&unix.Timespec{Nsec: 10000}, nil)
		}
	}
	return r, nil
}

// dropDgram forgets a datagram that will never be sent.
func (nw *network) dropDgram(p *pendingOp) {
	if dg := p.chunk.dg; dg.fd >= 0 {
		unix.Close(dg.fd)
		dg.fd = -1
	}
	nw.ops.dropPending(p)
}
