package launch

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRunZygote() // TSCTraps' probe runs the test binary again
	os.Exit(m.Run())
}

// TestTSCTraps: the probe's answer is the C probe's (testdata/tsc/rdtsc.c,
// `make testdata`), which reads the counter with the compiler's intrinsic:
// yes on a machine that honours PR_TSC_SIGSEGV, no on one whose hypervisor
// ignores it. Both kinds of machine pass.
func TestTSCTraps(t *testing.T) {
	traps, err := TSCTraps()
	if err != nil {
		t.Fatal(err)
	}
	probe, _ := filepath.Abs("../../../testdata/bin/tsc/rdtsc")
	if _, err := os.Stat(probe); err != nil {
		t.Skipf("TSCTraps says %v; the C probe to compare with is not built (make testdata): %v", traps, err)
	}
	err = exec.Command(probe, "--probe").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the C probe: %v", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	cTraps := ws.Signaled() && ws.Signal() == syscall.SIGSEGV
	if !cTraps && ee.ExitCode() != 3 {
		t.Fatalf("the C probe: %v", err)
	}
	if traps != cTraps {
		t.Fatalf("TSCTraps says %v, the C probe (%v) says %v", traps, err, cTraps)
	}
	t.Logf("rdtsc faults when asked: %v", traps)
}
