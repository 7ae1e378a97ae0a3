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
const DatagramSyscall = sched.DatagramSyscall

// dropDatagram discards the pending datagram deliver op id (a drop fault).
//
// Precondition: runs on the tracer thread.
func (nw *network) dropDatagram(id uint64) error {
	p := nw.ops.byID(id)
	if p == nil || p.chunk == nil || p.chunk.dg == nil {
		return fmt.Errorf("drop: no datagram in flight with id %d", id)
	}
	nw.dropDgram(p)
	nw.stats.Drops++
	return nil
}

// dgramDest is where a send on a datagram socket goes: the address the call
// names, else the socket's peer (a sendmmsg's first message's).
func (th *thread) dgramDest(fi *fdInfo, c call) netip.AddrPort {
	switch c.nr {
	case unix.SYS_SENDTO:
		if c.addr != 0 {
			_, ap := decodeSockaddr(th.tid, c.addr, c.addrLen)
			return ap
		}
	case unix.SYS_SENDMSG, unix.SYS_SENDMMSG:
		return th.msgDest(fi, c.buf)
	}
	return fi.peer
}

// msgDest is where the message whose struct msghdr is at hdr goes.
func (th *thread) msgDest(fi *fdInfo, hdr uint64) netip.AddrPort {
	if name, length := msgName(th.tid, hdr); name != 0 {
		_, ap := decodeSockaddr(th.tid, name, length)
		return ap
	}
	return fi.peer
}

// Where a sendmmsg's messages are (struct mmsghdr: a msghdr, then msg_len
// and padding), and how many it takes.
const (
	sizeofMmsghdr = 64
	offMsgLen     = 56
	uioMaxiov     = 1024
)

// dgramGated says whether a datagram socket's call takes part in the
// schedule: a send to a gated address; a receive on a socket connected to
// a gated address, or bound to a node's or the wildcard address (what it
// receives then comes only from lockstep's deliveries).
func (nw *network) dgramGated(th *thread, fi *fdInfo, c call) bool {
	switch c.nr {
	case unix.SYS_WRITE, unix.SYS_WRITEV, unix.SYS_SENDTO, unix.SYS_SENDMSG:
		d := th.dgramDest(fi, c)
		return d.IsValid() && nw.pt.gated(d.Addr().Unmap())
	case unix.SYS_SENDMMSG:
		// Any message to a node: each is captured (captureDgrams).
		for i := range min(c.n, uioMaxiov) {
			if d := th.msgDest(fi, c.buf+i*sizeofMmsghdr); d.IsValid() && nw.pt.gated(d.Addr().Unmap()) {
				return true
			}
		}
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
	if p.call.nr == unix.SYS_SENDMMSG {
		return nw.captureDgrams(p)
	}
	dst := p.th.dgramDest(p.fi, p.call)
	if p.fi.dup < 0 || !dst.IsValid() {
		return 0, errors.New("datagram with no destination")
	}
	data, err := nw.payload(p)
	if err != nil {
		return 0, err
	}
	if err := nw.queueDgram(p, dst, data); err != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

// captureDgrams captures a sendmmsg's datagrams, each a delivery of its
// own, and writes each one's msg_len as the kernel does. A message it
// cannot read or send ends the call there, or fails it when it is the
// first, as in the kernel.
func (nw *network) captureDgrams(p *pendingOp) (int64, error) {
	var sent int64
	for i := range min(p.call.n, uioMaxiov) {
		if err := nw.captureDgramAt(p, p.call.buf+i*sizeofMmsghdr); err != nil {
			if sent > 0 {
				break
			}
			return 0, err
		}
		sent++
	}
	return sent, nil
}

// captureDgramAt captures the datagram of the struct mmsghdr at hdr.
func (nw *network) captureDgramAt(p *pendingOp, hdr uint64) error {
	th := p.th
	dst := th.msgDest(p.fi, hdr)
	if p.fi.dup < 0 || !dst.IsValid() {
		return errors.New("datagram with no destination")
	}
	data, _, err := nw.msgPayload(th.tid, hdr, maxCapture)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
	if err := ptrace.WriteMem(th.tid, hdr+offMsgLen, n[:]); err != nil {
		nw.bufs.put(data)
		return err
	}
	return nw.queueDgram(p, dst, data)
}

// queueDgram queues a deliver op for a datagram to dst, captured from p's
// send.
func (nw *network) queueDgram(p *pendingOp, dst netip.AddrPort, data []byte) error {
	fi := p.fi
	if fi.local.Port() == 0 {
		// Bind now, as the kernel's send would have: the receiver's reply
		// must find the sender's port before lockstep delivers.
		nw.bindEphemeral(p.th.proc.node, fi)
	}
	fd, err := dupCloexec(fi.dup)
	if err != nil {
		return err
	}
	key := p.th.proc.dgramSource(fi).String() + ">" + dst.String()
	op := sched.Op{
		Node: p.op.Node, LPID: p.op.LPID, Thread: p.op.Thread, Kind: sched.Deliver, Site: p.op.Site, Caller: p.op.Caller,
		Object: nw.pt.inbox(dst.Addr()), Peer: dst.String(), Conn: key, Bytes: len(data),
		Syscall: DatagramSyscall,
	}
	if nw.opts.MatchBytes > 0 {
		// A hold of one kind of message holds datagrams too.
		op.Msg = string(data[:min(len(data), nw.opts.MatchBytes)])
	}
	nw.ops.newChunkOp(&chunk{data: data, dg: &dgram{fd: fd, dst: dst}, sendID: p.op.ID}, op, []uint64{p.op.ID})
	return nil
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
