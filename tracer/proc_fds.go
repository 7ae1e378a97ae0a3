package tracer

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

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
	case strings.HasPrefix(target, "/proc/"):
		fi.kind = fdFile
		if statm, ok := p.procStatOf(target); ok {
			src := "/proc/" + strconv.Itoa(p.pid) + "/fd/" + strconv.Itoa(fd)
			fi.kind, fi.stat = fdProcStat, &procStat{src: src, statm: statm}
		}
	default:
		fi.kind = fdFile
	}
	p.fds[fd] = fi
	return fi
}

// dupCloexec duplicates one of lockstep's descriptors, close-on-exec from
// the start. A dup followed by FD_CLOEXEC leaves a moment in which a fork
// elsewhere in lockstep (another job's tracer starting a node, a probe, a
// checker) copies the descriptor into a child that keeps it across exec:
// a node's socket then outlives the node, bound in its namespace, and the
// next trial's program fails to bind its port.
func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// dupFd duplicates a tracee's descriptor into lockstep; pidfd_getfd makes
// it close-on-exec.
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

// listenKey names a listener by the node's address even when it is bound to
// the wildcard address, so that connects and accepts agree.
func (p *process) listenKey(fi *fdInfo) string {
	a := fi.local.Addr()
	if a.IsUnspecified() && p.node.addr.IsValid() {
		a = p.node.addr
	}
	return netip.AddrPortFrom(a, fi.local.Port()).String()
}
