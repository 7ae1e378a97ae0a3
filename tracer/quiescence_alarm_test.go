package tracer

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The alarm stops its process once the armed delay passes, and not at all
// when disarmed first, however often it is armed again.
func TestAlarm(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("skipping: cannot start sleep: %v", err)
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	a, err := newAlarm(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	stopped := func() bool {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(pid, &ws, unix.WUNTRACED|unix.WNOHANG, nil)
		if err != nil {
			t.Fatal(err)
		}
		return wpid == pid && ws.Stopped()
	}

	for range 100 {
		a.arm(time.Hour)
		a.disarm()
	}
	a.arm(20 * time.Millisecond)
	a.disarm()
	time.Sleep(100 * time.Millisecond)
	if stopped() {
		t.Fatal("a disarmed alarm stopped the process")
	}

	a.arm(time.Hour) // replaced by the next arm: only its delay counts
	a.arm(time.Millisecond)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WUNTRACED, nil); err != nil {
		t.Fatal(err)
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGSTOP {
		t.Fatalf("wait status %#x, want stopped by SIGSTOP", ws)
	}
	unix.Kill(pid, unix.SIGCONT)
}
