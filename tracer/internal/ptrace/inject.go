package ptrace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Inject makes a stopped thread execute one syscall of the caller's choosing
// and returns its result, restoring registers and code afterwards. The
// syscall instruction is written over the code at the thread's pc for one
// single step.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func Inject(tid int, nr uint64, args ...uint64) (int64, error) {
	var saved Regs
	if err := GetRegs(tid, &saved); err != nil {
		return 0, err
	}
	pc := saved.PC()
	var code [8]byte
	if err := ReadMem(tid, pc, code[:]); err != nil {
		return 0, err
	}
	patched := code
	copy(patched[:], syscallInsn[:])
	if err := PokeText(tid, pc, patched[:]); err != nil {
		return 0, err
	}
	defer PokeText(tid, pc, code[:])
	defer SetRegs(tid, &saved)
	regs := saved
	var a [6]uint64
	copy(a[:], args)
	regs.setSyscall(nr, a)
	// A thread stopped inside a syscall first finishes it: that step
	// reports with nothing executed and the syscall's result in the result
	// register, so the registers are set again and the step repeated. At
	// the exec stop the syscall is done; at a seccomp stop it is skipped
	// (setSyscall), and the thread no longer makes it: the caller fakes
	// its result or has it made again (Regs.Reenter).
	for try := 0; ; try++ {
		if err := SetRegs(tid, &regs); err != nil {
			return 0, err
		}
		if err := stepOnce(tid); err != nil {
			return 0, err
		}
		var after Regs
		if err := GetRegs(tid, &after); err != nil {
			return 0, err
		}
		switch {
		case after.PC() == pc+uint64(len(syscallInsn)):
			return after.Result(), nil
		case after.PC() != pc || try > 0:
			return 0, fmt.Errorf("injected syscall %d: the thread stepped to %#x from %#x", nr, after.PC(), pc)
		}
	}
}

// stepOnce single-steps tid until its step trap, stepping over the stops
// (seccomp) that come before it.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func stepOnce(tid int) error {
	if err := SingleStep(tid); err != nil {
		return err
	}
	for {
		got, st, err := Wait(tid, unix.WALL)
		if err != nil || got != tid {
			return fmt.Errorf("waiting for injected syscall: %v", err)
		}
		if st.Gone() {
			return errors.New("thread died during an injected syscall")
		}
		if st.Kind() == StepTrap {
			return nil
		}
		// Another stop (seccomp for a gated syscall): step again.
		if err := SingleStep(tid); err != nil {
			return err
		}
	}
}
