package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tscProbeEnv makes MaybeRunZygote run the probe of TSCTraps instead.
const tscProbeEnv = "LOCKSTEP_TSC_PROBE"

// tscUntrapped is the probe's exit status when rdtsc did not fault.
const tscUntrapped = 3

// readTSC is rdtsc (tsc_amd64.s).
func readTSC() uint64

// TSCTraps says whether this machine makes rdtsc fault in a thread that
// asked for it (PR_SET_TSC, PR_TSC_SIGSEGV), as nodes ask (TrapTSC). A
// hypervisor that does not pass CR4.TSD on ignores the request, and the
// prctl succeeds all the same: only a read tells. The read is made by this
// binary started again (MaybeRunZygote), whose death by SIGSEGV is the
// answer yes.
func TSCTraps() (bool, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), tscProbeEnv+"=1")
	err := cmd.Run()
	if err == nil {
		return false, errors.New("the probe of rdtsc exited 0: it did not run as the probe")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false, fmt.Errorf("the probe of rdtsc: %w", err)
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGSEGV:
		return true, nil
	case ws.Exited() && ws.ExitStatus() == tscUntrapped:
		return false, nil
	}
	return false, fmt.Errorf("the probe of rdtsc: %v", err)
}

// runTSCProbe reads the counter after asking for it to fault, with
// SIGSEGV's default action (Go's runtime would turn the fault into a
// panic): the kernel kills the process if the read faults.
func runTSCProbe() int {
	runtime.LockOSThread()
	var dfl [4]uint64 // struct sigaction: handler SIG_DFL, no flags, no mask
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGSEGV), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_TSC, unix.PR_TSC_SIGSEGV, 0, 0, 0); err != nil {
		return 1
	}
	readTSC()
	return tscUntrapped
}
