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
