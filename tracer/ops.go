package tracer

import (
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// pendingOp is a sched.Op plus what the tracer needs to probe and release it.
type pendingOp struct {
	op   sched.Op
	seq  uint64 // order of appearance within a quiescent round
	th   *thread
	nr   int
	args [6]uint64
	fd   int
	fi   *fdInfo
	// deadline is the virtual time (ns) at which a sleep or timeout expires;
	// -1 when the op has none.
	deadline int64
	// immediate: a zero timeout (poll) or a non-blocking socket; the op
	// cannot block whatever the state.
	immediate bool
	// silent: a connect to an address on the cluster's subnet that no node
	// has; no one will answer (see silentConnect).
	silent  bool
	probe   []unix.PollFd
	chunk   *chunk // for deliveries
	causes  []uint64
	dropped bool
	// polled is the opTable.pollGen of the batched poll that answered
	// pollReady for this op (see pollPending).
	polled    uint64
	pollReady bool
	// byBooks: pollReady came from lockstep's books (known), not a poll.
	byBooks bool
	// mmsgEnd is the virtual time at which a recvmmsg's timeout ends;
	// mmsgTimed says it has one (releaseMmsgTimeout).
	mmsgEnd   int64
	mmsgTimed bool
}

// allow resumes a stopped thread into its real syscall.
func (th *thread) allow() {
	th.tab.stats.Released++
	th.cont(0)
}

// fake skips the syscall and makes it return ret.
func (th *thread) fake(ret int64) {
	th.regs.Skip(ret)
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		// ESRCH: another thread's exit_group took this one down while it
		// sat in its stop; its exit event follows.
		lvl := slog.LevelWarn
		if err == unix.ESRCH {
			lvl = slog.LevelDebug
		}
		th.tab.log.Log(context.Background(), lvl, "faking syscall result", "thread", th.String(), "err", err)
	}
	th.cont(0)
}

// inbox names the node's inbox object ("inbox:NAME").
func (ni *nodeInfo) inbox() string {
	if ni.inboxName == "" {
		ni.inboxName = "inbox:" + ni.name
	}
	return ni.inboxName
}

func addrString(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
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

func (po *pendingOp) addProbe(fd int, ev int16) {
	if fd < 0 {
		return
	}
	p := po.th.proc
	fi := p.fdOf(fd)
	if fi.dup < 0 {
		fi.dup = p.dupFd(fd)
	}
	if fi.dup < 0 {
		return
	}
	po.probe = append(po.probe, unix.PollFd{Fd: int32(fi.dup), Events: ev})
}

func ready(fds []unix.PollFd) bool {
	if len(fds) == 0 {
		return false
	}
	for i := range fds {
		fds[i].Revents = 0
	}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func readyFd(fd int, ev int16) bool {
	if fd < 0 {
		return false
	}
	return ready([]unix.PollFd{{Fd: int32(fd), Events: ev}})
}

type pollSpan struct {
	p          *pendingOp
	start, end int
}

// silentConnect is how long, in virtual time, a blocking connect to an
// address on the subnet that no node has takes to fail with EHOSTUNREACH:
// Linux gives up after three unanswered ARP probes a second apart. Left to
// the kernel it would take that long in real time, beyond any schedule.
// A non-blocking one fails at once, as it does once the kernel's neighbour
// entry has failed.
const silentConnect = 3 * time.Second

// connectWaitLimit is how long lockstep waits, in real time, for a
// handshake between two nodes before it asks whether the SYN was lost
// (handshaking); past it, a lost one (a full backlog, a dead peer) leaves
// the connect to the kernel's timing.
const connectWaitLimit = 200 * time.Millisecond

// timeoutPoll makes a poll-family call return "timed out" without waiting.
func (th *thread) timeoutPoll(p *pendingOp) {
	a := p.args
	switch p.nr {
	case unix.SYS_POLL, unix.SYS_PPOLL:
		n := int(a[1])
		if n > 0 && n <= 4096 {
			buf := make([]byte, 8*n)
			if ptrace.ReadMem(th.tid, a[0], buf) == nil {
				for i := 0; i < n; i++ {
					buf[8*i+6], buf[8*i+7] = 0, 0
				}
				ptrace.WriteMem(th.tid, a[0], buf)
			}
		}
	case unix.SYS_SELECT, unix.SYS_PSELECT6:
		nfds := int(a[0])
		for _, addr := range []uint64{a[1], a[2], a[3]} {
			if addr != 0 && nfds > 0 && nfds <= 1024 {
				ptrace.WriteMem(th.tid, addr, make([]byte, (nfds+63)/64*8))
			}
		}
		if p.nr == unix.SYS_SELECT && a[4] != 0 {
			ptrace.WriteMem(th.tid, a[4], make([]byte, 16)) // Linux updates the timeout
		}
	}
	th.fake(0)
}

type errUnknownOp uint64

func (e errUnknownOp) Error() string {
	return "releasing op #" + strconv.FormatUint(uint64(e), 10) + ": no such pending op"
}

// queued returns the bytes waiting in the stream socket a recv reads
// from, -1 when that is not known (not a stream socket lockstep holds a
// duplicate of, or the ioctl failed).
func (p *pendingOp) queued() int {
	if p.fi == nil || p.fi.dup < 0 || p.fi.sockType != unix.SOCK_STREAM {
		return -1
	}
	avail, err := unix.IoctlGetInt(p.fi.dup, unix.SIOCINQ)
	if err != nil {
		return -1
	}
	return avail
}

// nothingToRead reports whether a stream socket's recv, about to run, will
// find neither bytes nor end of stream; avail is what queued returned.
func (p *pendingOp) nothingToRead(avail int) bool {
	if avail != 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(p.fi.dup), Events: unix.POLLIN | unix.POLLRDHUP}}
	n, err := unix.Poll(fds, 0)
	return err == nil && (n == 0 || fds[0].Revents&(unix.POLLIN|unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) == 0)
}
