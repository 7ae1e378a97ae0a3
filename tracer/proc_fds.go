package tracer

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// fdKind classifies a tracee's file descriptor for gating decisions.
type fdKind uint8

const (
	fdUnknown fdKind = iota
	fdFile           // regular file, pipe, tty, eventfd...: node-local
	fdRandom         // /dev/urandom or /dev/random: answered from the seeded stream
	fdUnix           // AF_UNIX or other node-local socket
	fdInet           // AF_INET/AF_INET6 socket
)

// fdInfo is what the tracer knows of one fd of one process. The cache is
// dropped on close, dup2/dup3/close_range and exec, the only ways a number
// can start naming another file without passing through a gated syscall
// (dup and fcntl(F_DUPFD) only take free numbers, which close freed).
type fdInfo struct {
	kind     fdKind
	sockType int
	// dup is lockstep's own duplicate (pidfd_getfd) of the tracee's fd, used
	// for readiness probes and to deliver captured bytes; -1 when none.
	dup       int
	local     netip.AddrPort
	peer      netip.AddrPort
	listening bool
	// names caches the connection's names, made for every op on it.
	names fdNames
	// opts caches the socket's blocking mode, receive timeout and
	// low-water mark.
	opts sockOpts
	// calmRecv and calmSend are the network.netGen at which a poll found
	// the socket without bytes, end or error (for a recv), without error
	// or hang-up (for a send); see known.
	calmRecv, calmSend uint64
}

// fdNames are an fd's connection names for the addresses they were made
// from (a datagram socket's can change).
type fdNames struct {
	local, peer   netip.AddrPort
	out, in, addr string
}

func (f *fdInfo) named() *fdNames {
	if n := &f.names; n.out == "" || n.local != f.local || n.peer != f.peer {
		l, p := f.local.String(), f.peer.String()
		*n = fdNames{local: f.local, peer: f.peer, out: l + ">" + p, in: p + ">" + l, addr: addrString(f.peer)}
	}
	return &f.names
}

func (f *fdInfo) outKey() string { return f.named().out }
func (f *fdInfo) inKey() string  { return f.named().in }

// peerString is addrString(f.peer), cached.
func (f *fdInfo) peerString() string { return f.named().addr }

// fdOf returns the cached info for fd, classifying it on first use.
func (p *process) fdOf(fd int) *fdInfo {
	if fd < 0 {
		return &fdInfo{kind: fdUnknown, dup: -1}
	}
	if fi, ok := p.fds[fd]; ok {
		if fi.kind == fdInet && !fi.peer.IsValid() && !fi.listening {
			p.refreshSock(fd, fi)
		}
		return fi
	}
	fi := &fdInfo{dup: -1}
	target, err := readlink("/proc/" + strconv.Itoa(p.pid) + "/fd/" + strconv.Itoa(fd))
	switch {
	case err != nil:
		fi.kind = fdUnknown
		// Not cached: the fd may not exist yet.
		return fi
	case strings.HasPrefix(target, "socket:"):
		p.classifySocket(fd, fi)
	case target == "/dev/urandom" || target == "/dev/random":
		fi.kind = fdRandom
	default:
		fi.kind = fdFile
	}
	p.fds[fd] = fi
	return fi
}

func readlink(path string) (string, error) {
	var buf [256]byte
	n, err := unix.Readlink(path, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func (p *process) dupFd(fd int) int {
	if p.pidfd <= 0 {
		return -1
	}
	d, err := unix.PidfdGetfd(p.pidfd, fd, 0)
	if err != nil {
		return -1
	}
	unix.CloseOnExec(d)
	return d
}

func (p *process) classifySocket(fd int, fi *fdInfo) {
	fi.kind = fdUnix
	d := p.dupFd(fd)
	if d < 0 {
		return
	}
	dom, err := unix.GetsockoptInt(d, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || (dom != unix.AF_INET && dom != unix.AF_INET6) {
		unix.Close(d)
		return
	}
	fi.kind = fdInet
	fi.dup = d
	fi.sockType, _ = unix.GetsockoptInt(d, unix.SOL_SOCKET, unix.SO_TYPE)
	p.refreshSock(fd, fi)
}

func (p *process) refreshSock(fd int, fi *fdInfo) {
	if fi.dup < 0 {
		return
	}
	if acc, err := unix.GetsockoptInt(fi.dup, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err == nil && acc == 1 {
		fi.listening = true
	}
	if sa, err := unix.Getsockname(fi.dup); err == nil {
		fi.local = sockaddrToAddrPort(sa)
	}
	if sa, err := unix.Getpeername(fi.dup); err == nil {
		fi.peer = sockaddrToAddrPort(sa)
	}
}

func sockaddrToAddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// forgetFd drops the cache entry for fd. Lockstep's duplicate is kept open
// by the caller when captured bytes still wait for delivery.
func (p *process) forgetFd(fd int) *fdInfo {
	fi := p.fds[fd]
	delete(p.fds, fd)
	return fi
}

// In descriptor order, as the kernel closes them: a duplicate released here
// may be a connection's last reference, and its FIN leaves now.
func (t *Tracer) forgetAllFds(p *process) {
	for _, fd := range slices.Sorted(maps.Keys(p.fds)) {
		t.net.releaseDup(p.fds[fd])
		delete(p.fds, fd)
	}
}

// decodeSockaddr reads a sockaddr argument from the tracee.
func decodeSockaddr(pid int, addr uint64, length uint64) (family int, ap netip.AddrPort) {
	if addr == 0 || length < 2 {
		return -1, ap
	}
	if length > 128 {
		length = 128
	}
	b := make([]byte, length)
	if ptrace.ReadMem(pid, addr, b) != nil {
		return -1, ap
	}
	family = int(b[0]) | int(b[1])<<8
	switch {
	case family == unix.AF_INET && len(b) >= 8:
		port := uint16(b[2])<<8 | uint16(b[3])
		ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case family == unix.AF_INET6 && len(b) >= 24:
		port := uint16(b[2])<<8 | uint16(b[3])
		ap = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port)
	}
	return family, ap
}

// Ephemeral ports lockstep binds, within Linux's default local port range.
const (
	firstEphemeral = 32768
	lastEphemeral  = 60999
)
