package tracer

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
)

// pendingOp is a sched.Op plus what the tracer needs to probe and release it.
type pendingOp struct {
	op  sched.Op
	seq uint64 // order of appearance within a quiescent round
	// kind is what the tracer does with it (opTable.kindOf), looked up
	// once: every state asks it of every pending op.
	kind *opKind
	th   *thread
	// call is the syscall the op's thread stopped at.
	call call
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
