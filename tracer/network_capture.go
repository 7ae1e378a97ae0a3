package tracer

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// freshData is the head of the message the last capture queued: what a
// captured send sent.
func (nw *network) freshData() []byte {
	if p := nw.ops.lastFresh(); p != nil && p.chunk != nil {
		return nw.head(p.chunk.data)
	}
	return nil
}

// capture copies a send's bytes out of the tracee and queues a deliver op
// (one per message of a sendmmsg), and returns what the send returns.
func (nw *network) capture(p *pendingOp) (int64, error) {
	fi := p.fi
	if fi.dup < 0 || !fi.peer.IsValid() {
		return 0, errors.New("socket not connected")
	}
	if p.call.nr == unix.SYS_SENDMMSG {
		return nw.captureMmsg(p)
	}
	data, err := nw.payload(p)
	if err != nil {
		return 0, err
	}
	if len(data) > 0 {
		if err := nw.queueChunk(p, data); err != nil {
			return 0, err
		}
	}
	return int64(len(data)), nil
}

// captureMmsg captures a sendmmsg's messages on a stream socket, each a
// delivery of its own in order, and writes each one's msg_len as the
// kernel does. It stops after a message it took only part of (past
// maxCapture in all): the call then returns that fewer messages went, as
// a partial send on a non-blocking socket does, and the program sends the
// rest again. A message it cannot read ends the call there, or fails it
// when it is the first, as in the kernel.
func (nw *network) captureMmsg(p *pendingOp) (int64, error) {
	tid, c := p.th.tid, p.call
	var sent int64
	room := maxCapture
	for i := range min(c.n, uioMaxiov) {
		hdr := c.buf + i*sizeofMmsghdr
		data, whole, err := nw.msgPayload(tid, hdr, room)
		if err != nil {
			if sent > 0 {
				break
			}
			return 0, err
		}
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
		if err := ptrace.WriteMem(tid, hdr+offMsgLen, n[:]); err != nil {
			nw.bufs.put(data)
			if sent > 0 {
				break
			}
			return 0, err
		}
		if len(data) > 0 {
			if err := nw.queueChunk(p, data); err != nil {
				nw.bufs.put(data)
				if sent > 0 {
					break
				}
				return 0, err
			}
		}
		sent++
		room -= len(data)
		if !whole || room == 0 {
			break
		}
	}
	return sent, nil
}

// queueChunk queues a deliver op for data, captured from p's send, on
// p's connection.
func (nw *network) queueChunk(p *pendingOp, data []byte) error {
	fi := p.fi
	key := fi.outKey()
	c := nw.conns[key]
	if c == nil || c.dup < 0 {
		// New, or the 4-tuple of a closed connection reused.
		d, err := dupCloexec(fi.dup)
		if err != nil {
			return err
		}
		c = &conn{key: key, dup: d, src: fi.local, dst: fi.peer}
		nw.conns[key] = c
	}
	op := sched.Op{
		Node: p.op.Node, LPID: p.op.LPID, Thread: p.op.Thread, Kind: sched.Deliver, Site: p.op.Site, Caller: p.op.Caller,
		Object: nw.pt.inbox(fi.peer.Addr()), Peer: fi.peer.String(), Conn: key, Bytes: len(data),
		Syscall: "deliver",
	}
	if nw.opts.MatchBytes > 0 {
		op.Msg = string(data[:min(len(data), nw.opts.MatchBytes)])
	}
	d := nw.ops.newChunkOp(&chunk{data: data, buf: data, conn: c, sendID: p.op.ID}, op, []uint64{p.op.ID})
	c.queue = append(c.queue, d)
	c.queued += len(data)
	return nil
}

// payload copies the bytes a send would send out of the tracee, into a
// buffer of t.bufs.
func (nw *network) payload(p *pendingOp) ([]byte, error) {
	th, c := p.th, p.call
	switch c.nr {
	case unix.SYS_WRITE, unix.SYS_SENDTO:
		data := nw.bufs.get(int(min(c.n, maxCapture)))
		if err := ptrace.ReadMem(th.tid, c.buf, data); err != nil {
			nw.bufs.put(data)
			return nil, err
		}
		return data, nil
	case unix.SYS_WRITEV:
		return nw.gather(th.tid, c.buf, c.n)
	case unix.SYS_SENDMSG:
		data, _, err := nw.msgPayload(th.tid, c.buf, maxCapture)
		return data, err
	}
	return nil, errors.New("unsupported send syscall")
}

// msgPayload copies the bytes of the message whose struct msghdr is at
// hdr, up to room of them; whole says it took them all.
func (nw *network) msgPayload(tid int, hdr uint64, room int) (data []byte, whole bool, err error) {
	var h [56]byte
	if err := ptrace.ReadMem(tid, hdr, h[:]); err != nil {
		return nil, false, err
	}
	iov := binary.LittleEndian.Uint64(h[16:])
	iovlen := binary.LittleEndian.Uint64(h[24:])
	controllen := binary.LittleEndian.Uint64(h[40:])
	if controllen != 0 {
		return nil, false, errors.New("sendmsg with ancillary data")
	}
	return nw.gatherUpTo(tid, iov, iovlen, room)
}

// gather copies the bytes an iovec array names (up to maxCapture) in one
// read.
func (nw *network) gather(pid int, iovAddr, iovcnt uint64) ([]byte, error) {
	data, _, err := nw.gatherUpTo(pid, iovAddr, iovcnt, maxCapture)
	return data, err
}

// gatherUpTo is gather of up to room bytes; whole says it took them all.
func (nw *network) gatherUpTo(pid int, iovAddr, iovcnt uint64, room int) ([]byte, bool, error) {
	if iovcnt > 1024 {
		return nil, false, errors.New("too many iovecs")
	}
	raw := make([]byte, 16*iovcnt)
	if err := ptrace.ReadMem(pid, iovAddr, raw); err != nil {
		return nil, false, err
	}
	segs := make([]unix.RemoteIovec, 0, iovcnt)
	total, whole := 0, true
	for i := uint64(0); i < iovcnt; i++ {
		base := binary.LittleEndian.Uint64(raw[16*i:])
		full := binary.LittleEndian.Uint64(raw[16*i+8:])
		l := min(full, uint64(room-total))
		if l < full {
			whole = false
		}
		if l == 0 {
			continue
		}
		segs = append(segs, unix.RemoteIovec{Base: uintptr(base), Len: int(l)})
		total += int(l)
	}
	out := nw.bufs.get(total)
	if err := ptrace.ReadMemVec(pid, out, segs); err != nil {
		nw.bufs.put(out)
		return nil, false, err
	}
	return out, whole, nil
}
