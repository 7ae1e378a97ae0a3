package ptrace

import (
	"golang.org/x/sys/unix"
)

// Options are the ptrace options every traced thread carries: seccomp
// RET_TRACE stops, clone, fork, vfork and exec events (so that children are
// traced from their first instruction), syscall-trap marking, and death of
// the tracees with the tracer.
const Options = unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK |
	unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_EXITKILL

// Seize attaches to pid with Options without stopping it.
//
// Precondition: runs on the tracer thread.
func Seize(pid int) error {
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, Options, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Cont resumes a stopped thread, delivering sig unless it is 0.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func Cont(tid, sig int) error { return unix.PtraceCont(tid, sig) }

// Listen leaves a thread in its group-stop while letting events (SIGCONT,
// exit) still be reported.
//
// Precondition: runs on the tracer thread; tid is in a group-stop.
func Listen(tid int) error {
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_LISTEN, uintptr(tid), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Interrupt stops a running (or sleeping) thread; it reports an EventStop.
//
// Precondition: runs on the tracer thread.
func Interrupt(tid int) error { return unix.PtraceInterrupt(tid) }

// SingleStep resumes a stopped thread for one instruction.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func SingleStep(tid int) error { return unix.PtraceSingleStep(tid) }

// EventMsg returns the message of the event the thread stopped at: the new
// thread's id at a clone, fork or vfork stop, the former thread id at an
// exec stop.
//
// Precondition: runs on the tracer thread; tid is at an event stop.
func EventMsg(tid int) (uint64, error) {
	m, err := unix.PtraceGetEventMsg(tid)
	return uint64(m), err
}

// GetRegs reads a stopped thread's general registers.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func GetRegs(tid int, r *Regs) error { return unix.PtraceGetRegs(tid, &r.r) }

// SetRegs writes a stopped thread's general registers.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func SetRegs(tid int, r *Regs) error { return unix.PtraceSetRegs(tid, &r.r) }
