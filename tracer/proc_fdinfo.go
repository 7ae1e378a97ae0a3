package tracer

import "net/netip"

// fdKind classifies a tracee's file descriptor for gating decisions.
type fdKind uint8

const (
	fdUnknown  fdKind = iota
	fdFile            // regular file, pipe, tty, eventfd...: node-local
	fdRandom          // /dev/urandom or /dev/random: answered from the seeded stream
	fdUnix            // AF_UNIX or other node-local socket
	fdInet            // AF_INET/AF_INET6 socket
	fdProcStat        // the process's own /proc stat or statm: its RSS fixed (proc_stat.go)
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
	// stat is the read state of an fdProcStat fd.
	stat *procStat
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

// sockOpts is what lockstep last read of a socket's blocking mode,
// receive timeout and low-water mark, through its duplicate (which shares
// the tracee's file description and socket): read at every recv they cost
// a syscall each. It holds while gen is the tracer's sockOptsGen, which
// every call that can change them moves on (onSockOptsChange).
type sockOpts struct {
	gen      uint64
	nonblock bool
	rcvTimeo int64 // ns; 0: none
	// rcvLowat is SO_RCVLOWAT, read only for the books (see known): the
	// bytes a recv waits for.
	rcvLowat int
}

func addrString(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
}
