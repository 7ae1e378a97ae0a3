package tracer

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// This file is the one place that knows which register holds which
// argument of a syscall. Every syscall the tracer stops at, or names, has
// a row in syscallTable: its name and its argument layout, the role of each
// of its six arguments in order. decodeCall reads the registers through the
// layout once, at the stop, into a call; the gates and the release of the
// ops they make read the call's fields by role, never a register by number.
// A new gated syscall is a row here and one in gateTable.

// An arg is the role of one syscall argument: which field of a call it
// fills.
type arg uint8

const (
	argNone    arg = iota // not read
	argFd                 // call.fd
	argFd2                // call.fd2
	argBuf                // call.buf
	argLen                // call.n
	argFlags              // call.flags
	argAddr               // call.addr
	argAddrLen            // call.addrLen
	argTimeout            // call.timeout
	argIn                 // call.in
	argOut                // call.out
	argID                 // call.id
	argSigmask            // call.sigmask
	argPath               // call.path
	argPath2              // call.path2
	argOff                // call.off
	argFdSet              // call.fdSets, in order
)

// A layout is the role of each argument of a syscall, in register order.
type layout [6]arg

// args makes a layout from the roles of the leading arguments; the rest
// are not read.
func args(roles ...arg) layout {
	var l layout
	copy(l[:], roles)
	return l
}

// A call is one syscall at its seccomp stop, decoded: its arguments by
// role. A field whose role the syscall's layout lacks is zero. Pointers and
// counts are kept as the registers hold them; descriptors are read as the
// kernel reads them, from the low 32 bits, sign and all.
type call struct {
	nr int
	// fd is the descriptor the call acts on: a socket, file, epoll or
	// timer descriptor; dup's and close_range's first; sendfile's out,
	// splice's in; the directory an *at call's (first) path is relative to.
	fd int
	// fd2 is a second descriptor: dup's new one, close_range's last,
	// sendfile's in, splice's out, the directory of an *at call's second
	// path.
	fd2 int
	// buf is the data the call moves: a buffer, an iovec array, a struct
	// msghdr, an mmsghdr vector, a pollfd array.
	buf uint64
	// n is a count or size: buf's bytes, iovecs, messages or pollfds;
	// select's nfds; alarm's seconds; a truncate's length.
	n uint64
	// flags: MSG_ flags, shutdown's how, futex's operation, the
	// TIMER_ABSTIME of clock_nanosleep and the timer calls, open flags.
	flags uint64
	// addr and addrLen are a socket address and its length.
	addr, addrLen uint64
	// timeout points at a struct timespec (select's: a timeval), or is
	// poll's and epoll_wait's milliseconds.
	timeout uint64
	// in points at a value the call reads (a timer's new setting, a
	// sigevent, openat2's open_how); out at where it writes one (the old
	// setting, the time left, a clock reading, a new timer's id).
	in, out uint64
	// id is a clock, a POSIX timer or an interval timer (setitimer's
	// which).
	id uint64
	// sigmask points at the signal mask a wait installs (pselect6's: at
	// the {sigset, size} pair that points at it).
	sigmask uint64
	// path and path2 point at NUL-terminated paths.
	path, path2 uint64
	// off is a file offset.
	off uint64
	// fdSets are select's readfds, writefds and exceptfds.
	fdSets [3]uint64

	roles layout
	raw   [6]uint64
}

// decodeCall reads syscall nr's arguments from their registers by its
// layout; a syscall without a row keeps only its number and registers.
func decodeCall(nr int, raw [6]uint64) call {
	c := call{nr: nr, raw: raw, roles: syscallTable[nr].args}
	sets := c.fdSets[:0]
	for i, role := range c.roles {
		v := raw[i]
		switch role {
		case argFd:
			c.fd = int(int32(v))
		case argFd2:
			c.fd2 = int(int32(v))
		case argBuf:
			c.buf = v
		case argLen:
			c.n = v
		case argFlags:
			c.flags = v
		case argAddr:
			c.addr = v
		case argAddrLen:
			c.addrLen = v
		case argTimeout:
			c.timeout = v
		case argIn:
			c.in = v
		case argOut:
			c.out = v
		case argID:
			c.id = v
		case argSigmask:
			c.sigmask = v
		case argPath:
			c.path = v
		case argPath2:
			c.path2 = v
		case argOff:
			c.off = v
		case argFdSet:
			sets = append(sets, v)
		}
	}
	return c
}

// noTimeoutArg is where a timeout is when no argument holds it (a socket's
// receive timeout).
const noTimeoutArg = -1

// timeoutArg is the position of the call's timeout argument, for
// Regs.SetArg; noTimeoutArg when it has none.
func (c *call) timeoutArg() int {
	for i, role := range c.roles {
		if role == argTimeout {
			return i
		}
	}
	return noTimeoutArg
}

// first is the first argument as the kernel shows it in
// /proc/PID/task/TID/syscall, whatever its role: what tells a thread still
// asleep in the call from one that left it (thread.inWait).
func (c *call) first() uint64 { return c.raw[0] }

// A syscallInfo names a syscall and lays out its arguments.
type syscallInfo struct {
	name string
	args layout
}

// syscallTable has a row for every syscall the tracer gates (gateTable),
// tells a node's Disk of (diskOps), or names where a thread is commonly
// found asleep.
var syscallTable = map[int]syscallInfo{
	// Sockets (sockets_gates.go).
	unix.SYS_READ:     {"read", args(argFd, argBuf, argLen)},
	unix.SYS_READV:    {"readv", args(argFd, argBuf, argLen)},
	unix.SYS_RECVFROM: {"recvfrom", args(argFd, argBuf, argLen, argFlags, argAddr, argAddrLen)},
	unix.SYS_RECVMSG:  {"recvmsg", args(argFd, argBuf, argFlags)},
	unix.SYS_RECVMMSG: {"recvmmsg", args(argFd, argBuf, argLen, argFlags, argTimeout)},
	unix.SYS_WRITE:    {"write", args(argFd, argBuf, argLen)},
	unix.SYS_WRITEV:   {"writev", args(argFd, argBuf, argLen)},
	unix.SYS_SENDTO:   {"sendto", args(argFd, argBuf, argLen, argFlags, argAddr, argAddrLen)},
	unix.SYS_SENDMSG:  {"sendmsg", args(argFd, argBuf, argFlags)},
	unix.SYS_SENDMMSG: {"sendmmsg", args(argFd, argBuf, argLen, argFlags)},
	unix.SYS_CLOSE:    {"close", args(argFd)},
	unix.SYS_SHUTDOWN: {"shutdown", args(argFd, argFlags)},
	unix.SYS_CONNECT:  {"connect", args(argFd, argAddr, argAddrLen)},
	unix.SYS_BIND:     {"bind", args(argFd, argAddr, argAddrLen)},
	unix.SYS_ACCEPT:   {"accept", args(argFd, argAddr, argAddrLen)},
	unix.SYS_ACCEPT4:  {"accept4", args(argFd, argAddr, argAddrLen, argFlags)},
	// Polls: poll's and epoll_wait's timeouts are milliseconds, the
	// others' point at a timespec (select's at a timeval).
	unix.SYS_POLL:         {"poll", args(argBuf, argLen, argTimeout)},
	unix.SYS_PPOLL:        {"ppoll", args(argBuf, argLen, argTimeout, argSigmask)},
	unix.SYS_SELECT:       {"select", args(argLen, argFdSet, argFdSet, argFdSet, argTimeout)},
	unix.SYS_PSELECT6:     {"pselect6", args(argLen, argFdSet, argFdSet, argFdSet, argTimeout, argSigmask)},
	unix.SYS_EPOLL_WAIT:   {"epoll_wait", args(argFd, argBuf, argLen, argTimeout)},
	unix.SYS_EPOLL_PWAIT:  {"epoll_pwait", args(argFd, argBuf, argLen, argTimeout, argSigmask)},
	unix.SYS_EPOLL_PWAIT2: {"epoll_pwait2", args(argFd, argBuf, argLen, argTimeout, argSigmask)},
	// Sleeps and timed waits (vtime_waits.go).
	unix.SYS_NANOSLEEP:       {"nanosleep", args(argTimeout, argOut)},
	unix.SYS_CLOCK_NANOSLEEP: {"clock_nanosleep", args(argID, argFlags, argTimeout, argOut)},
	unix.SYS_FUTEX:           {"futex", args(argNone, argFlags, argNone, argTimeout)},
	unix.SYS_RT_SIGTIMEDWAIT: {"rt_sigtimedwait", args(argNone, argNone, argTimeout)},
	unix.SYS_SEMTIMEDOP:      {"semtimedop", args(argNone, argNone, argNone, argTimeout)},
	unix.SYS_MQ_TIMEDRECEIVE: {"mq_timedreceive", args(argFd, argBuf, argLen, argNone, argTimeout)},
	unix.SYS_MQ_TIMEDSEND:    {"mq_timedsend", args(argFd, argBuf, argLen, argNone, argTimeout)},
	unix.SYS_FUTEX_WAITV:     {"futex_waitv", args(argBuf, argLen, argFlags, argTimeout, argID)},
	// Clocks (vtime_clock.go) and getrandom (proc.go).
	unix.SYS_CLOCK_GETTIME: {"clock_gettime", args(argID, argOut)},
	unix.SYS_GETTIMEOFDAY:  {"gettimeofday", args(argOut)},
	unix.SYS_TIME:          {"time", args(argOut)},
	unix.SYS_GETRANDOM:     {"getrandom", args(argBuf, argLen, argFlags)},
	// Kernel timers (vtime_timers.go).
	unix.SYS_TIMERFD_SETTIME:  {"timerfd_settime", args(argFd, argFlags, argIn, argOut)},
	unix.SYS_TIMERFD_GETTIME:  {"timerfd_gettime", args(argFd, argOut)},
	unix.SYS_ALARM:            {"alarm", args(argLen)},
	unix.SYS_SETITIMER:        {"setitimer", args(argID, argIn, argOut)},
	unix.SYS_GETITIMER:        {"getitimer", args(argID, argOut)},
	unix.SYS_TIMER_CREATE:     {"timer_create", args(argID, argIn, argOut)},
	unix.SYS_TIMER_SETTIME:    {"timer_settime", args(argID, argFlags, argIn, argOut)},
	unix.SYS_TIMER_GETTIME:    {"timer_gettime", args(argID, argOut)},
	unix.SYS_TIMER_GETOVERRUN: {"timer_getoverrun", args(argID)},
	unix.SYS_TIMER_DELETE:     {"timer_delete", args(argID)},
	// The disk: flushes, calls that run alone (quiescence_wait.go) and
	// what a Disk is told of (disk.go).
	unix.SYS_FSYNC:           {"fsync", args(argFd)},
	unix.SYS_FDATASYNC:       {"fdatasync", args(argFd)},
	unix.SYS_SYNC_FILE_RANGE: {"sync_file_range", args(argFd, argOff, argLen, argFlags)},
	unix.SYS_SYNCFS:          {"syncfs", args(argFd)},
	unix.SYS_SYNC:            {"sync", args()},
	unix.SYS_MSYNC:           {"msync", args(argBuf, argLen, argFlags)},
	unix.SYS_FALLOCATE:       {"fallocate", args(argFd, argFlags, argOff, argLen)},
	unix.SYS_FTRUNCATE:       {"ftruncate", args(argFd, argLen)},
	unix.SYS_TRUNCATE:        {"truncate", args(argPath, argLen)},
	unix.SYS_RENAME:          {"rename", args(argPath, argPath2)},
	unix.SYS_RENAMEAT:        {"renameat", args(argFd, argPath, argFd2, argPath2)},
	unix.SYS_RENAMEAT2:       {"renameat2", args(argFd, argPath, argFd2, argPath2, argFlags)},
	unix.SYS_PWRITE64:        {"pwrite64", args(argFd, argBuf, argLen, argOff)},
	unix.SYS_PWRITEV:         {"pwritev", args(argFd, argBuf, argLen, argOff)},
	unix.SYS_PREAD64:         {"pread64", args(argFd, argBuf, argLen, argOff)},
	unix.SYS_PREADV:          {"preadv", args(argFd, argBuf, argLen, argOff)},
	unix.SYS_OPEN:            {"open", args(argPath, argFlags)},
	unix.SYS_OPENAT:          {"openat", args(argFd, argPath, argFlags)},
	unix.SYS_CREAT:           {"creat", args(argPath)},
	unix.SYS_OPENAT2:         {"openat2", args(argFd, argPath, argIn)},
	unix.SYS_MKDIR:           {"mkdir", args(argPath)},
	unix.SYS_MKDIRAT:         {"mkdirat", args(argFd, argPath)},
	unix.SYS_LINK:            {"link", args(argPath, argPath2)},
	unix.SYS_LINKAT:          {"linkat", args(argFd, argPath, argFd2, argPath2, argFlags)},
	unix.SYS_SYMLINK:         {"symlink", args(argPath, argPath2)},
	unix.SYS_SYMLINKAT:       {"symlinkat", args(argPath, argFd2, argPath2)},
	unix.SYS_UNLINK:          {"unlink", args(argPath)},
	unix.SYS_UNLINKAT:        {"unlinkat", args(argFd, argPath, argFlags)},
	unix.SYS_RMDIR:           {"rmdir", args(argPath)},
	// Ways around the gate (sockets_bypass.go): sendfile(out, in, ...),
	// splice(in, off, out, off, ...).
	unix.SYS_SPLICE:   {"splice", args(argFd, argNone, argFd2, argNone, argLen, argFlags)},
	unix.SYS_SENDFILE: {"sendfile", args(argFd, argFd2, argNone, argLen)},
	unix.SYS_PREADV2:  {"preadv2", args(argFd, argBuf, argLen, argOff, argNone, argFlags)},
	unix.SYS_PWRITEV2: {"pwritev2", args(argFd, argBuf, argLen, argOff, argNone, argFlags)},
	// The descriptor table and socket settings (proc_table.go).
	unix.SYS_DUP2:        {"dup2", args(argFd, argFd2)},
	unix.SYS_DUP3:        {"dup3", args(argFd, argFd2, argFlags)},
	unix.SYS_CLOSE_RANGE: {"close_range", args(argFd, argFd2, argFlags)},
	unix.SYS_FCNTL:       {"fcntl", args(argFd)},
	unix.SYS_IOCTL:       {"ioctl", args(argFd)},
	unix.SYS_SETSOCKOPT:  {"setsockopt", args(argFd)},
	// Not gated: where a thread is commonly found asleep (the rest show
	// as numbers).
	unix.SYS_WAIT4:         {"wait4", args()},
	unix.SYS_WAITID:        {"waitid", args()},
	unix.SYS_EXECVE:        {"execve", args()},
	unix.SYS_SCHED_YIELD:   {"sched_yield", args()},
	unix.SYS_RT_SIGSUSPEND: {"rt_sigsuspend", args()},
	unix.SYS_PAUSE:         {"pause", args()},
	unix.SYS_CLONE:         {"clone", args()},
	unix.SYS_CLONE3:        {"clone3", args()},
	unix.SYS_VFORK:         {"vfork", args()},
	unix.SYS_FORK:          {"fork", args()},
	unix.SYS_EXIT:          {"exit", args()},
	unix.SYS_EXIT_GROUP:    {"exit_group", args()},
}

// syscallName names syscall nr, or numbers it when it has no row.
func syscallName(nr int) string {
	if s, ok := syscallTable[nr]; ok {
		return s.name
	}
	return "syscall" + strconv.Itoa(nr)
}
