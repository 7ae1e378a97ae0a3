package tracer

import (
	"strconv"

	"golang.org/x/sys/unix"
)

var syscallNames = map[int]string{
	unix.SYS_READ: "read", unix.SYS_WRITE: "write", unix.SYS_READV: "readv", unix.SYS_WRITEV: "writev",
	unix.SYS_CLOSE: "close", unix.SYS_CONNECT: "connect", unix.SYS_ACCEPT: "accept", unix.SYS_ACCEPT4: "accept4",
	unix.SYS_SENDTO: "sendto", unix.SYS_SENDMSG: "sendmsg", unix.SYS_SENDMMSG: "sendmmsg",
	unix.SYS_RECVFROM: "recvfrom", unix.SYS_RECVMSG: "recvmsg", unix.SYS_RECVMMSG: "recvmmsg",
	unix.SYS_SHUTDOWN: "shutdown", unix.SYS_POLL: "poll", unix.SYS_PPOLL: "ppoll", unix.SYS_SELECT: "select",
	unix.SYS_PSELECT6: "pselect6", unix.SYS_EPOLL_WAIT: "epoll_wait", unix.SYS_EPOLL_PWAIT: "epoll_pwait",
	unix.SYS_EPOLL_PWAIT2: "epoll_pwait2", unix.SYS_NANOSLEEP: "nanosleep", unix.SYS_CLOCK_NANOSLEEP: "clock_nanosleep",
	unix.SYS_FUTEX: "futex",

	// virtual kernel timers (timers.go)
	unix.SYS_TIMERFD_SETTIME: "timerfd_settime", unix.SYS_TIMERFD_GETTIME: "timerfd_gettime", unix.SYS_ALARM: "alarm",
	unix.SYS_SETITIMER: "setitimer", unix.SYS_GETITIMER: "getitimer", unix.SYS_TIMER_CREATE: "timer_create",
	unix.SYS_TIMER_SETTIME: "timer_settime", unix.SYS_TIMER_GETTIME: "timer_gettime",
	unix.SYS_TIMER_GETOVERRUN: "timer_getoverrun", unix.SYS_TIMER_DELETE: "timer_delete",
}

func syscallName(nr int) string {
	if n, ok := syscallNames[nr]; ok {
		return n
	}
	return "syscall" + strconv.Itoa(nr)
}
