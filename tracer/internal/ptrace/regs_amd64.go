package ptrace

import "golang.org/x/sys/unix"

// Regs are a stopped thread's general registers. Callers name them by role
// (syscall number, argument, result, pc); only this file knows x86-64's.
type Regs struct{ r unix.PtraceRegs }

// Syscall is the number of the syscall the thread stopped in.
func (r *Regs) Syscall() int { return int(r.r.Orig_rax) }

// Args are the syscall's six arguments.
func (r *Regs) Args() [6]uint64 {
	return [6]uint64{r.r.Rdi, r.r.Rsi, r.r.Rdx, r.r.R10, r.r.R8, r.r.R9}
}

// SetArg replaces argument i (from 0) of the syscall about to run.
func (r *Regs) SetArg(i int, v uint64) {
	switch i {
	case 0:
		r.r.Rdi = v
	case 1:
		r.r.Rsi = v
	case 2:
		r.r.Rdx = v
	case 3:
		r.r.R10 = v
	case 4:
		r.r.R8 = v
	case 5:
		r.r.R9 = v
	}
}

// Result is the syscall's return value (at an exit or after a step).
func (r *Regs) Result() int64 { return int64(r.r.Rax) }

// SetResult replaces the syscall's return value.
func (r *Regs) SetResult(v int64) { r.r.Rax = uint64(v) }

// Skip makes the syscall at a syscall-entry stop not run and return ret.
func (r *Regs) Skip(ret int64) {
	r.r.Orig_rax = ^uint64(0)
	r.r.Rax = uint64(ret)
}

// Reenter makes a thread that an injection took out of its syscall-entry
// stop (its syscall skipped) make the same syscall again when it resumes:
// back over the two-byte syscall instruction, with the number in rax, as
// the kernel restarts a syscall.
func (r *Regs) Reenter() {
	r.r.Rip -= uint64(len(syscallInsn))
	r.r.Rax = r.r.Orig_rax
}

// PC is the instruction pointer.
func (r *Regs) PC() uint64 { return r.r.Rip }

// SP is the stack pointer.
func (r *Regs) SP() uint64 { return r.r.Rsp }

// FP is the frame pointer.
func (r *Regs) FP() uint64 { return r.r.Rbp }

// setSyscall prepares the registers to enter syscall nr with args at the
// syscall instruction Inject writes. The syscall instruction takes the
// number from rax; orig_rax is -1 so that a syscall the thread is stopped
// at the entry of (a seccomp stop) is skipped rather than run as nr.
func (r *Regs) setSyscall(nr uint64, a [6]uint64) {
	r.r.Rax, r.r.Orig_rax = nr, ^uint64(0)
	r.r.Rdi, r.r.Rsi, r.r.Rdx, r.r.R10, r.r.R8, r.r.R9 = a[0], a[1], a[2], a[3], a[4], a[5]
}

// syscallInsn is the instruction Inject writes at the pc.
var syscallInsn = [...]byte{0x0f, 0x05}

// EmulateTSC answers a time-stamp counter read that faulted (PR_TSC_SIGSEGV)
// at the thread's pc, whose first bytes are code, with tsc: it sets the
// result registers and moves the pc past the instruction. It reports false
// when code is not rdtsc or rdtscp.
func (r *Regs) EmulateTSC(code [3]byte, tsc uint64) bool {
	switch {
	case code[0] == 0x0f && code[1] == 0x31: // rdtsc
		r.AnswerTSC(tsc, 2)
	case code[0] == 0x0f && code[1] == 0x01 && code[2] == 0xf9: // rdtscp
		r.AnswerTSC(tsc, 3)
	default:
		return false
	}
	return true
}

// AnswerTSC completes a counter read of size bytes at the pc with tsc:
// rdtsc (2 bytes) or rdtscp (3, which also reads IA32_TSC_AUX: CPU 0).
func (r *Regs) AnswerTSC(tsc, size uint64) {
	if size == 3 {
		r.r.Rcx = 0
	}
	r.r.Rax = tsc & 0xffffffff
	r.r.Rdx = tsc >> 32
	r.r.Rip += size
}
