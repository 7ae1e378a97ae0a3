package tracer

import (
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// A gate is what the tracer does at the seccomp stop of one syscall.
type gate struct {
	name string
	// clock says the gate needs virtual time: without a clock the syscall
	// runs natively.
	clock bool
	// handle answers the stop, releases it or makes it a pending op, and
	// reports true; false lets the syscall run natively.
	handle func(t *Tracer, th *thread, nr int, a [6]uint64) bool
}

// gateTable returns the syscalls that stop under the tracer; every other syscall
// runs natively. To gate another one, add its entry here with its handler:
// the seccomp filter is built from this table, and whether a pending op is
// enabled and how it is released go by the op's kind (enabled, release).
//
// read, write and close stop too because a filter cannot tell a socket from
// a file: their handlers release non-socket ones at once from a per-fd
// cache. futex stops only for waits with a timeout (the filter's own rule).
//
// A function, not a package variable, because the handlers name syscalls
// through the table (an initialization cycle otherwise).
func gateTable() map[int]gate {
	return map[int]gate{
		unix.SYS_READ:            {name: "read", handle: (*Tracer).onRecv},
		unix.SYS_READV:           {name: "readv", handle: (*Tracer).onRecv},
		unix.SYS_RECVFROM:        {name: "recvfrom", handle: (*Tracer).onRecv},
		unix.SYS_RECVMSG:         {name: "recvmsg", handle: (*Tracer).onRecv},
		unix.SYS_RECVMMSG:        {name: "recvmmsg", handle: (*Tracer).onRecv},
		unix.SYS_WRITE:           {name: "write", handle: (*Tracer).onSend},
		unix.SYS_WRITEV:          {name: "writev", handle: (*Tracer).onSend},
		unix.SYS_SENDTO:          {name: "sendto", handle: (*Tracer).onSend},
		unix.SYS_SENDMSG:         {name: "sendmsg", handle: (*Tracer).onSend},
		unix.SYS_SENDMMSG:        {name: "sendmmsg", handle: (*Tracer).onSend},
		unix.SYS_CLOSE:           {name: "close", handle: (*Tracer).onClose},
		unix.SYS_SHUTDOWN:        {name: "shutdown", handle: (*Tracer).onShutdown},
		unix.SYS_CONNECT:         {name: "connect", handle: (*Tracer).onConnect},
		unix.SYS_ACCEPT:          {name: "accept", handle: (*Tracer).onAccept},
		unix.SYS_ACCEPT4:         {name: "accept4", handle: (*Tracer).onAccept},
		unix.SYS_POLL:            {name: "poll", handle: (*Tracer).onPoll},
		unix.SYS_PPOLL:           {name: "ppoll", handle: (*Tracer).onPoll},
		unix.SYS_SELECT:          {name: "select", handle: (*Tracer).onPoll},
		unix.SYS_PSELECT6:        {name: "pselect6", handle: (*Tracer).onPoll},
		unix.SYS_EPOLL_WAIT:      {name: "epoll_wait", handle: (*Tracer).onPoll},
		unix.SYS_EPOLL_PWAIT:     {name: "epoll_pwait", handle: (*Tracer).onPoll},
		unix.SYS_EPOLL_PWAIT2:    {name: "epoll_pwait2", handle: (*Tracer).onPoll},
		unix.SYS_NANOSLEEP:       {name: "nanosleep", clock: true, handle: (*Tracer).onSleep},
		unix.SYS_CLOCK_NANOSLEEP: {name: "clock_nanosleep", clock: true, handle: (*Tracer).onSleep},
		unix.SYS_FUTEX:           {name: "futex", clock: true, handle: (*Tracer).onFutex},
		unix.SYS_CLOCK_GETTIME:   {name: "clock_gettime", clock: true, handle: (*Tracer).onClockGettime},
		unix.SYS_GETTIMEOFDAY:    {name: "gettimeofday", clock: true, handle: (*Tracer).onGettimeofday},
		unix.SYS_TIME:            {name: "time", clock: true, handle: (*Tracer).onTime},
		unix.SYS_GETRANDOM:       {name: "getrandom", handle: (*Tracer).onGetrandom},
		// Virtual kernel timers (timers.go). timerfd_create is not gated: a
		// timerfd's clock is read from /proc/PID/fdinfo when it is first armed.
		unix.SYS_TIMERFD_SETTIME:  {name: "timerfd_settime", clock: true, handle: timerGate((*Tracer).onTimerfdSettime)},
		unix.SYS_TIMERFD_GETTIME:  {name: "timerfd_gettime", clock: true, handle: timerGate((*Tracer).onTimerfdGettime)},
		unix.SYS_ALARM:            {name: "alarm", clock: true, handle: timerGate((*Tracer).onAlarm)},
		unix.SYS_SETITIMER:        {name: "setitimer", clock: true, handle: timerGate((*Tracer).onSetitimer)},
		unix.SYS_GETITIMER:        {name: "getitimer", clock: true, handle: timerGate((*Tracer).onGetitimer)},
		unix.SYS_TIMER_CREATE:     {name: "timer_create", clock: true, handle: timerGate((*Tracer).onTimerCreate)},
		unix.SYS_TIMER_SETTIME:    {name: "timer_settime", clock: true, handle: timerGate((*Tracer).onTimerSettime)},
		unix.SYS_TIMER_GETTIME:    {name: "timer_gettime", clock: true, handle: timerGate((*Tracer).onTimerGettime)},
		unix.SYS_TIMER_GETOVERRUN: {name: "timer_getoverrun", clock: true, handle: timerGate((*Tracer).onTimerGetoverrun)},
		unix.SYS_TIMER_DELETE:     {name: "timer_delete", clock: true, handle: timerGate((*Tracer).onTimerDelete)},
		// Changes to the fd table that would make the fd kind cache stale.
		unix.SYS_DUP2:        {name: "dup2", handle: (*Tracer).onDup},
		unix.SYS_DUP3:        {name: "dup3", handle: (*Tracer).onDup},
		unix.SYS_CLOSE_RANGE: {name: "close_range", handle: (*Tracer).onCloseRange},
	}
}

// timerGate adapts a timer handler, which needs no syscall number.
func timerGate(h func(t *Tracer, th *thread, a [6]uint64) bool) func(*Tracer, *thread, int, [6]uint64) bool {
	return func(t *Tracer, th *thread, _ int, a [6]uint64) bool { return h(t, th, a) }
}

// filteredSyscalls lists the gates the seccomp filter stops unconditionally,
// in ascending order (futex has a rule of its own).
func filteredSyscalls(gates map[int]gate) []uint32 {
	var nrs []uint32
	for nr := range gates {
		if nr != unix.SYS_FUTEX {
			nrs = append(nrs, uint32(nr))
		}
	}
	slices.Sort(nrs)
	return nrs
}

func (t *Tracer) syscallName(nr int) string {
	if g, ok := t.gates[nr]; ok {
		return g.name
	}
	return "syscall" + strconv.Itoa(nr)
}
