package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// diagSock is a NETLINK_SOCK_DIAG socket in one node's network namespace,
// for exact lookups of a TCP socket by its 4-tuple. (A dump with a filter
// walks the whole established hash, which costs a millisecond here; an
// exact lookup is a few µs.)
type diagSock struct {
	fd  int
	buf []byte
}

// openDiag opens a sock_diag socket in the namespace at path ("" = ours).
// It runs on the tracer thread, which is locked to its OS thread, so the
// namespace switch affects nothing else.
func openDiag(path string) (*diagSock, error) {
	if path != "" {
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return nil, err
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			return nil, fmt.Errorf("entering %s: %w", path, err)
		}
		defer func() {
			if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
				panic("tracer: cannot return to its network namespace: " + err.Error())
			}
		}()
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &diagSock{fd: fd, buf: make([]byte, 8192)}, nil
}

func (d *diagSock) Close() error { return unix.Close(d.fd) }

var errNoSocket = errors.New("no such socket")

// sock_diag message types.
const (
	sockDiagByFamily = 20
	sockDestroy      = 21
)

// diagRequest builds an exact sock_diag request (struct inet_diag_req_v2,
// any state) for the IPv4 TCP socket with this local and remote address.
func diagRequest(typ, flags uint16, local, remote netip.AddrPort) []byte {
	const (
		hdrLen = 16
		reqLen = 56
	)
	req := make([]byte, hdrLen+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], typ)
	ne.PutUint16(req[6:], flags)
	ne.PutUint32(req[8:], 1)
	r := req[hdrLen:]
	r[0] = unix.AF_INET
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // all states
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	l4, r4 := local.Addr().Unmap().As4(), remote.Addr().Unmap().As4()
	copy(id[4:8], l4[:])
	copy(id[20:24], r4[:])
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	return req
}

// rqueue returns the bytes waiting in the receive queue of the TCP socket
// with this local and remote address.
func (d *diagSock) rqueue(local, remote netip.AddrPort) (uint32, error) {
	rq, _, err := d.lookup(local, remote)
	return rq, err
}

// lookup returns the receive queue length and the TCP state of a socket.
func (d *diagSock) lookup(local, remote netip.AddrPort) (uint32, uint8, error) {
	const hdrLen = 16
	req := diagRequest(sockDiagByFamily, unix.NLM_F_REQUEST, local, remote)
	ne := binary.NativeEndian
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, 0, err
	}
	n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
	if err != nil {
		return 0, 0, err
	}
	if n < hdrLen {
		return 0, 0, errors.New("short sock_diag reply")
	}
	switch ne.Uint16(d.buf[4:]) {
	case unix.NLMSG_ERROR:
		if errno := int32(ne.Uint32(d.buf[16:])); errno != 0 {
			if unix.Errno(-errno) == unix.ENOENT {
				return 0, 0, errNoSocket
			}
			return 0, 0, unix.Errno(-errno)
		}
		return 0, 0, errNoSocket
	case sockDiagByFamily:
		// struct inet_diag_msg: 4 bytes, sockid (48), expires, rqueue, ...
		if n < hdrLen+60 {
			return 0, 0, errors.New("short inet_diag_msg")
		}
		return ne.Uint32(d.buf[hdrLen+56:]), d.buf[hdrLen+1], nil
	}
	return 0, 0, fmt.Errorf("unexpected sock_diag reply type %d", ne.Uint16(d.buf[4:]))
}

// finWaitLimit bounds the real time a FIN is waited for. A FIN crosses a
// veth in microseconds, but on a machine whose CPUs are all busy its
// delivery (a softirq) has been seen to take over 200 ms; past the limit
// the schedule may differ from a quiet run's, so the limit is generous
// (the wait ends as soon as the FIN is there).
const finWaitLimit = time.Second

// finWait is a FIN on its way to a peer: until the peer's socket has left
// ESTABLISHED, whether its recv sees the end of the stream depends on timing.
type finWait struct {
	closer, node  *nodeInfo      // the closing side's node and the peer's
	local, remote netip.AddrPort // the peer's view
	until         time.Time
}

// netSettled reports whether every FIN in flight has arrived (or waited
// long enough), dropping those that did.
func (t *Tracer) netSettled() bool {
	keep := t.finWaits[:0]
	for _, w := range t.finWaits {
		if time.Now().After(w.until) {
			t.stats.FinWaitsExpired++
			continue
		}
		if w.closer != nil && !t.finSent(w) {
			continue
		}
		d, err := t.diagFor(w.node)
		if err != nil {
			continue
		}
		_, state, err := d.lookup(w.local, w.remote)
		if err != nil || state != tcpEstablished {
			continue
		}
		keep = append(keep, w)
	}
	t.finWaits = keep
	return len(keep) == 0
}

// finSent reports whether the closing side really sent its FIN. A close
// sends none while another descriptor still holds the socket: a forked
// child's or a dup's, or lockstep's own duplicate holding undelivered
// bytes (closeConn expects the FIN again when it lets go). Waiting for the
// peer then would cost the whole connectWaitLimit for nothing.
func (t *Tracer) finSent(w finWait) bool {
	d, err := t.diagFor(w.closer)
	if err != nil {
		return true
	}
	_, state, err := d.lookup(w.remote, w.local)
	if err != nil {
		return true // gone (reset or closed): the peer's state decides
	}
	return state != tcpEstablished && state != tcpCloseWait
}

const (
	tcpEstablished = 1
	tcpCloseWait   = 8
)

// expectFin records that closing or shutting down the socket with this
// local and peer address may send a FIN to another node.
func (t *Tracer) expectFin(local, peer netip.AddrPort) {
	if !peer.IsValid() || !local.IsValid() || local.Port() == 0 {
		return
	}
	ni := t.byAddr[peer.Addr().Unmap()]
	if ni == nil {
		return
	}
	t.stats.FinWaits++
	t.finWaits = append(t.finWaits, finWait{
		closer: t.byAddr[local.Addr().Unmap()], node: ni,
		local: peer, remote: local, until: time.Now().Add(finWaitLimit),
	})
}
