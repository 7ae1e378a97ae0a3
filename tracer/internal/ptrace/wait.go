package ptrace

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Flags for Wait.
const (
	// Tracees waits for any traced thread of this thread (__WALL with
	// __WNOTHREAD: not those of another tracer thread in the process).
	Tracees = unix.WALL | wNothread
	// NoHang returns at once when nothing is waiting.
	NoHang = unix.WNOHANG
	// Untraced also reports stopped untraced children (the sentinel).
	Untraced = unix.WUNTRACED
)

const wNothread = 0x20000000 // __WNOTHREAD

// Kind is what a wait status reports.
type Kind uint8

const (
	// Exited: the thread exited; ExitCode says how.
	Exited Kind = iota
	// Killed: the thread died of Signal.
	Killed
	// SeccompStop: a RET_TRACE syscall-entry stop.
	SeccompStop
	// CloneStop: the thread made a thread, fork or vfork (EventMsg: its id).
	CloneStop
	// ExecStop: the thread's exec succeeded (EventMsg: its former id).
	ExecStop
	// EventStop: PTRACE_EVENT_STOP, a seized thread's first stop, an
	// Interrupt's stop or a group-stop (Signal tells which).
	EventStop
	// SyscallTrap: a syscall-exit trap (TRACESYSGOOD).
	SyscallTrap
	// StepTrap: a single step finished.
	StepTrap
	// SignalStop: signal-delivery stop for Signal.
	SignalStop
)

// Status is a decoded wait status.
type Status struct{ ws unix.WaitStatus }

// Kind says what the status reports.
func (s Status) Kind() Kind {
	ws := s.ws
	switch {
	case ws.Exited():
		return Exited
	case ws.Signaled():
		return Killed
	}
	sig := ws.StopSignal()
	switch event := int(ws) >> 16; {
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
		return SeccompStop
	case sig == unix.SIGTRAP && (event == unix.PTRACE_EVENT_CLONE || event == unix.PTRACE_EVENT_FORK || event == unix.PTRACE_EVENT_VFORK):
		return CloneStop
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_EXEC:
		return ExecStop
	case event == unix.PTRACE_EVENT_STOP:
		return EventStop
	case sig == unix.SIGTRAP|0x80:
		return SyscallTrap
	case sig == unix.SIGTRAP && event == 0:
		return StepTrap
	}
	return SignalStop
}

// Gone reports whether the thread no longer exists.
func (s Status) Gone() bool { return s.ws.Exited() || s.ws.Signaled() }

// Stopped reports a stop of any kind.
func (s Status) Stopped() bool { return s.ws.Stopped() }

// Signal is the signal that killed or stopped the thread.
func (s Status) Signal() syscall.Signal {
	if s.ws.Signaled() {
		return s.ws.Signal()
	}
	return s.ws.StopSignal()
}

// ExitCode is the exit code of an Exited thread.
func (s Status) ExitCode() int { return s.ws.ExitStatus() }

// Wait waits for a state change of pid (-1: any) with flags, retrying
// when interrupted. It returns 0 with NoHang when nothing is waiting.
//
// Precondition: runs on the tracer thread (other threads cannot wait for
// its tracees).
func Wait(pid, flags int) (int, Status, error) {
	for {
		var ws unix.WaitStatus
		tid, err := unix.Wait4(pid, &ws, flags, nil)
		if err == unix.EINTR {
			continue
		}
		return tid, Status{ws}, err
	}
}

// saNoCldStop is SA_NOCLDSTOP (x/sys/unix does not define it).
const saNoCldStop = 1

// kernelSigaction is the x86-64 kernel's struct sigaction for
// rt_sigaction.
type kernelSigaction struct {
	handler, flags, restorer, mask uint64
}

// QuietStops asks the kernel not to send the process SIGCHLD when a
// tracee stops (SA_NOCLDSTOP on the handler Go's runtime installed): a
// tracer learns of stops from wait4, which the kernel wakes either way,
// and every signal costs the tracer thread a signal frame, Go's handler
// and rt_sigreturn — about four per round trip. Exits still signal.
func QuietStops() error {
	var sa kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
		return e
	}
	if sa.flags&saNoCldStop != 0 {
		return nil
	}
	sa.flags |= saNoCldStop
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); e != 0 {
		return e
	}
	return nil
}
