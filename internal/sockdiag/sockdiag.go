package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/nsexec"
)

// Sock is a NETLINK_SOCK_DIAG socket in one network namespace,
// for exact lookups of a TCP socket by its 4-tuple. (A dump with a filter
// walks the whole established hash, which costs a millisecond here; an
// exact lookup is a few µs.)
type Sock struct {
	fd  int
	buf []byte
}

// Open opens a sock_diag socket in the network namespace at path (""
// for the caller's).
//
// Precondition: the calling goroutine is locked to its OS thread, so that
// the namespace switch affects nothing else.
func Open(path string) (*Sock, error) {
	var d *Sock
	open := func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			unix.Close(fd)
			return err
		}
		d = &Sock{fd: fd, buf: make([]byte, 8192)}
		return nil
	}
	if path == "" {
		err := open()
		return d, err
	}
	err := nsexec.Here(path, open)
	if errors.Is(err, nsexec.ErrStranded) {
		// The caller's thread (the tracer's) must not go on elsewhere.
		panic("sockdiag: cannot return to its network namespace: " + err.Error())
	}
	return d, err
}

// Close closes the socket.
func (d *Sock) Close() error { return unix.Close(d.fd) }

// ErrNoSocket says no socket has the addresses asked for.
var ErrNoSocket = errors.New("no such socket")

// sock_diag message types.
const (
	sockDiagByFamily = 20
	sockDestroy      = 21
)

// diagRequest builds an exact sock_diag request (struct inet_diag_req_v2,
// any state) for the IPv4 TCP socket with this local and remote address;
// ext asks for extensions (1<<(INET_DIAG_x-1)).
func diagRequest(typ, flags uint16, ext uint8, local, remote netip.AddrPort) []byte {
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
	r[2] = ext
	ne.PutUint32(r[4:], 0xffffffff) // all states
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	if local.IsValid() && remote.IsValid() { // a dump names no socket
		l4, r4 := local.Addr().Unmap().As4(), remote.Addr().Unmap().As4()
		copy(id[4:8], l4[:])
		copy(id[20:24], r4[:])
	}
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	return req
}

// RQueue returns the bytes waiting in the receive queue of the TCP socket
// with this local and remote address.
func (d *Sock) RQueue(local, remote netip.AddrPort) (uint32, error) {
	rq, _, err := d.Lookup(local, remote)
	return rq, err
}

// Lookup returns the receive queue length and the TCP state of a socket.
func (d *Sock) Lookup(local, remote netip.AddrPort) (uint32, uint8, error) {
	msg, err := d.query(local, remote, 0)
	if err != nil {
		return 0, 0, err
	}
	// struct inet_diag_msg: 4 bytes, sockid (48), expires, rqueue, ...
	return binary.NativeEndian.Uint32(msg[56:]), msg[1], nil
}

// Inode returns the TCP state of a socket and the inode of the socket file
// that holds it: 0 once no file does (the socket was released, or is an
// orphan on its way out).
func (d *Sock) Inode(local, remote netip.AddrPort) (uint8, uint32, error) {
	msg, err := d.query(local, remote, 0)
	if err != nil {
		return 0, 0, err
	}
	// struct inet_diag_msg: ..., rqueue, wqueue, uid, inode at 68.
	return msg[1], binary.NativeEndian.Uint32(msg[68:]), nil
}

// Sending is what holds back the bytes a TCP socket has to send.
type Sending struct {
	State uint8
	// Unacked counts segments sent and not acknowledged (tcpi_unacked):
	// bytes on their way, or received and not acknowledged yet.
	Unacked uint32
	// NotSent counts bytes (and a FIN) queued and not sent yet
	// (tcpi_notsent_bytes).
	NotSent uint32
	// Window is the peer's advertised receive window (tcpi_snd_wnd) and
	// MSS the largest segment (tcpi_snd_mss).
	Window, MSS uint32
}

// WindowFull reports whether the socket holds bytes back only because the
// peer's receive window has no room for them: nothing it sent is
// unacknowledged, so nothing moves until the peer reads (and says so).
func (s Sending) WindowFull() bool {
	return s.Unacked == 0 && s.NotSent > 0 && s.Window < min(s.NotSent, s.MSS)
}

// Offsets in struct tcp_info.
const (
	tcpiSndMSS   = 16
	tcpiUnacked  = 24
	tcpiNotsent  = 144
	tcpiSndWnd   = 228
	tcpiMinLen   = tcpiSndWnd + 4 // tcpi_snd_wnd came with Linux 5.4
	inetDiagInfo = 2              // INET_DIAG_INFO
)

// Sending returns the sending side of the TCP socket with this local and
// remote address (INET_DIAG_INFO). The error says when the kernel's
// tcp_info lacks a field.
func (d *Sock) Sending(local, remote netip.AddrPort) (Sending, error) {
	msg, err := d.query(local, remote, 1<<(inetDiagInfo-1))
	if err != nil {
		return Sending{}, err
	}
	ne := binary.NativeEndian
	// Attributes follow the 72-byte inet_diag_msg, each {len, type}
	// padded to 4 bytes.
	for a := msg[72:]; len(a) >= 4; {
		l := int(ne.Uint16(a))
		if l < 4 || l > len(a) {
			break
		}
		if ne.Uint16(a[2:]) == inetDiagInfo {
			ti := a[4:l]
			if len(ti) < tcpiMinLen {
				return Sending{}, errors.New("tcp_info without tcpi_snd_wnd")
			}
			return Sending{
				State:   msg[1],
				Unacked: ne.Uint32(ti[tcpiUnacked:]),
				NotSent: ne.Uint32(ti[tcpiNotsent:]),
				Window:  ne.Uint32(ti[tcpiSndWnd:]),
				MSS:     ne.Uint32(ti[tcpiSndMSS:]),
			}, nil
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	// No tcp_info: a socket past its life (TIME_WAIT) has none.
	return Sending{State: msg[1]}, nil
}

// query asks for one socket and returns its inet_diag_msg with the
// attributes after it.
func (d *Sock) query(local, remote netip.AddrPort, ext uint8) ([]byte, error) {
	const hdrLen = 16
	req := diagRequest(sockDiagByFamily, unix.NLM_F_REQUEST, ext, local, remote)
	ne := binary.NativeEndian
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
	if err != nil {
		return nil, err
	}
	if n < hdrLen {
		return nil, errors.New("short sock_diag reply")
	}
	switch ne.Uint16(d.buf[4:]) {
	case unix.NLMSG_ERROR:
		if errno := int32(ne.Uint32(d.buf[16:])); errno != 0 {
			if unix.Errno(-errno) == unix.ENOENT {
				return nil, ErrNoSocket
			}
			return nil, unix.Errno(-errno)
		}
		return nil, ErrNoSocket
	case sockDiagByFamily:
		if n < hdrLen+72 {
			return nil, errors.New("short inet_diag_msg")
		}
		end := min(int(ne.Uint32(d.buf[0:])), n)
		return d.buf[hdrLen:end], nil
	}
	return nil, fmt.Errorf("unexpected sock_diag reply type %d", ne.Uint16(d.buf[4:]))
}

// Destroy aborts the TCP socket with this local and remote address
// (SOCK_DESTROY, the kernel's `ss -K`).
func (d *Sock) Destroy(local, remote netip.AddrPort) error {
	req := diagRequest(sockDestroy, unix.NLM_F_REQUEST|unix.NLM_F_ACK, 0, local, remote)
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
	if err != nil {
		return err
	}
	ne := binary.NativeEndian
	if n < 20 || ne.Uint16(d.buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("unexpected sock_diag reply to SOCK_DESTROY")
	}
	switch errno := unix.Errno(-int32(ne.Uint32(d.buf[16:]))); errno {
	case 0:
		return nil
	case unix.ENOENT:
		return ErrNoSocket
	default:
		return errno
	}
}

// Listening reports whether a TCP socket of the namespace, IPv4 or IPv6,
// listens on port. A dump restricted to the LISTEN state walks only the
// listening hash: tens of µs, where entering the namespace to read
// /proc/net/tcp took milliseconds.
func (d *Sock) Listening(port uint16) (bool, error) {
	ports, err := d.ListenPorts()
	return slices.Contains(ports, port), err
}

// ListenPorts lists the ports TCP sockets of the namespace listen on,
// IPv4 and IPv6, in increasing order and each once.
func (d *Sock) ListenPorts() ([]uint16, error) {
	const listen = 10 // TCP_LISTEN
	seen := map[uint16]bool{}
	err := d.dumpFamilies(unix.IPPROTO_TCP, 1<<listen, func(msg []byte) {
		// The socket id's first field is the source port.
		if len(msg) >= 6 {
			seen[binary.BigEndian.Uint16(msg[4:])] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// dumpFamilies is dumpProto for IPv4, then IPv6; a kernel without IPv6
// has none to list.
func (d *Sock) dumpFamilies(proto byte, states uint32, each func(msg []byte)) error {
	if err := d.dumpProto(unix.AF_INET, proto, states, each); err != nil {
		return err
	}
	err := d.dumpProto(unix.AF_INET6, proto, states, each)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EAFNOSUPPORT) {
		return nil
	}
	return err
}

// BoundSocket is a UDP socket or TCP listener as Bound lists it: its
// local address and its inode (as /proc/PID/fd names it, socket:[inode]).
type BoundSocket struct {
	Local netip.AddrPort
	Inode uint32
}

// Bound lists the namespace's UDP sockets and TCP listeners, IPv4 and
// IPv6: what holds a port a program may bind.
func (d *Sock) Bound() ([]BoundSocket, error) {
	const listen = 10 // TCP_LISTEN
	var out []BoundSocket
	each := func(b []byte) {
		// struct inet_diag_msg: family, state, timer, retrans, the socket
		// id (sport, dport big endian, src and dst 16 bytes each,
		// interface, cookie), expires, rqueue, wqueue, uid, inode.
		if len(b) < 72 {
			return
		}
		id := b[4:]
		port := binary.BigEndian.Uint16(id[0:])
		var a netip.Addr
		if b[0] == unix.AF_INET6 {
			a = netip.AddrFrom16([16]byte(id[4:20]))
		} else {
			a = netip.AddrFrom4([4]byte(id[4:8]))
		}
		out = append(out, BoundSocket{Local: netip.AddrPortFrom(a, port), Inode: binary.NativeEndian.Uint32(b[68:])})
	}
	if err := d.dumpFamilies(unix.IPPROTO_UDP, 0xffffffff, each); err != nil {
		return nil, err
	}
	if err := d.dumpFamilies(unix.IPPROTO_TCP, 1<<listen, each); err != nil {
		return nil, err
	}
	return out, nil
}

// dump asks for every TCP socket of family whose state is in the states
// mask and calls each with its struct inet_diag_msg (family, state, timer,
// retrans, then the socket id), reading the replies to the end.
func (d *Sock) dump(family byte, states uint32, each func(msg []byte)) error {
	return d.dumpProto(family, unix.IPPROTO_TCP, states, each)
}

// dumpProto is dump for the sockets of protocol proto (TCP, UDP).
func (d *Sock) dumpProto(family, proto byte, states uint32, each func(msg []byte)) error {
	const hdrLen = 16
	req := diagRequest(sockDiagByFamily, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 0, netip.AddrPort{}, netip.AddrPort{})
	ne := binary.NativeEndian
	req[hdrLen] = family
	req[hdrLen+1] = proto
	ne.PutUint32(req[hdrLen+4:], states)
	return d.request(req, each)
}

// request sends a dump request and calls each with every reply's payload,
// reading the replies to the end.
func (d *Sock) request(req []byte, each func(msg []byte)) error {
	ne := binary.NativeEndian
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for {
		n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
		if err != nil {
			return err
		}
		for buf := d.buf[:n]; len(buf) >= unix.NLMSG_HDRLEN; {
			l := int(ne.Uint32(buf))
			if l < unix.NLMSG_HDRLEN || l > len(buf) {
				return errors.New("malformed sock_diag reply")
			}
			typ, data := ne.Uint16(buf[4:]), buf[unix.NLMSG_HDRLEN:l]
			buf = buf[min((l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1), len(buf)):]
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(data) >= 4 {
					if errno := int32(ne.Uint32(data)); errno != 0 {
						return unix.Errno(-errno)
					}
				}
				return nil
			case sockDiagByFamily:
				each(data)
			}
		}
	}
}

// Conn is one TCP socket as a dump lists it.
type Conn struct {
	Local, Remote netip.AddrPort
	State         uint8 // TCP_ESTABLISHED (1) ... TCP_CLOSING (11)
}

// TCP lists the namespace's IPv4 TCP connections, in every state but
// LISTEN: established, orphans on their way out, TIME_WAIT. Sockets bound
// and nothing more (TCP_BOUND_INACTIVE, Linux 6.5) have no peer and are
// left out: the kernel finds them by walking its bind table, which every
// namespace shares (65,536 buckets on a host of 24 GiB), and that walk
// was most of each dump's cost.
func (d *Sock) TCP() ([]Conn, error) {
	const (
		listen        = 10 // TCP_LISTEN
		boundInactive = 13 // TCP_BOUND_INACTIVE
		allStates     = 0xffffffff &^ (1 << listen) &^ (1 << boundInactive)
	)
	var out []Conn
	err := d.dump(unix.AF_INET, allStates, func(b []byte) {
		// struct inet_diag_msg: family, state, timer, retrans, then the
		// socket id: sport, dport (big endian), src, dst.
		if len(b) < 4+48 {
			return
		}
		id := b[4:]
		var src, dst [4]byte
		copy(src[:], id[4:8])
		copy(dst[:], id[20:24])
		out = append(out, Conn{
			Local:  netip.AddrPortFrom(netip.AddrFrom4(src), binary.BigEndian.Uint16(id[0:])),
			Remote: netip.AddrPortFrom(netip.AddrFrom4(dst), binary.BigEndian.Uint16(id[2:])),
			State:  b[1],
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
