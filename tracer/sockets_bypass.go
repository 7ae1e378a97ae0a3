package tracer

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Ways of moving bytes that would go around the gate. The filter refuses
// io_uring, Linux AIO and TCP Fast Open outright (launch.Filter); the
// calls here stop, and fail only when they involve what lockstep gates (a
// socket to another node), so that the same calls on files keep working.
// Each refusal is an errno the program's fallback expects, logged with the
// node and the syscall.

// onSocketSplice refuses splice and sendfile on a socket to another node
// with EINVAL, what the kernel answers for a file that cannot splice: Go's
// net package and Java's transferTo fall back to reads and writes, which
// the gate sees. (tee and vmsplice reach pipes only; copy_file_range
// regular files only.)
func (sk *sockets) onSocketSplice(th *thread, c call) bool {
	for _, fd := range [2]int{c.fd, c.fd2} {
		if sk.pt.toOtherNode(th.proc.fdOf(fd)) {
			sk.refuse(th, c.nr, unix.EINVAL, "fd "+strconv.Itoa(fd)+" is a socket to another node")
			return true
		}
	}
	return false
}

// onVectorIO refuses preadv2 and pwritev2 on a socket to another node
// with EOPNOTSUPP: readv and writev, which the gate sees, do the same.
func (sk *sockets) onVectorIO(th *thread, c call) bool {
	if !sk.pt.toOtherNode(th.proc.fdOf(c.fd)) {
		return false
	}
	sk.refuse(th, c.nr, unix.EOPNOTSUPP, "fd "+strconv.Itoa(c.fd)+" is a socket to another node")
	return true
}

// refuse fails the syscall th stopped at with errno, and says so.
func (sk *sockets) refuse(th *thread, nr int, errno unix.Errno, why string) {
	sk.log.Warn("refused a syscall that would bypass the schedule", "node", th.proc.node.name, "thread", th.String(),
		"syscall", syscallName(nr), "why", why, "errno", errno.Error())
	th.fake(-int64(errno))
}
