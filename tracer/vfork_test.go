package tracer

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A vfork parent waiting for its child is asleep until lockstep lets the
// child go; a fork asleep while it copies its parent is not, though both
// sleep uninterruptibly in the same syscall: only the first may count as
// quiescent.
func TestVforkWait(t *testing.T) {
	for _, tc := range []struct {
		nr    int
		wchan string
		want  bool
	}{
		{unix.SYS_VFORK, "kernel_clone", true},
		{unix.SYS_CLONE, "kernel_clone", true}, // CLONE_VFORK (posix_spawn)
		{unix.SYS_CLONE3, "wait_for_vfork_done", true},
		{unix.SYS_CLONE, "dup_mmap", false}, // a fork copying its parent
		{unix.SYS_CLONE, "copy_process", false},
		{unix.SYS_FUTEX, "kernel_clone", false},
	} {
		if got := vforkWait(tc.nr, tc.wchan); got != tc.want {
			t.Errorf("vforkWait(%d, %q) = %v, want %v", tc.nr, tc.wchan, got, tc.want)
		}
	}

	// This kernel's wait channel for a real vfork parent, and a sleeper's.
	cmd := exec.Command(bin(t, "c", "vfork_wait"), "3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	th := &thread{tid: cmd.Process.Pid, proc: &process{pid: cmd.Process.Pid}}
	for i := 0; ; i++ {
		if s, _, ok := th.kernelState(); ok && s == 'D' {
			break
		}
		if i == 200 {
			t.Fatal("the vfork parent never slept uninterruptibly")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !th.inVforkWait() {
		w, _ := readSmall("/proc/" + strconv.Itoa(th.tid) + "/wchan")
		t.Errorf("a vfork parent waiting for its child (wait channel %q) is not seen as one", w)
	}
	sleeper := exec.Command("sleep", "3")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Wait()
	defer sleeper.Process.Kill()
	time.Sleep(50 * time.Millisecond)
	if th := (&thread{tid: sleeper.Process.Pid, proc: &process{pid: sleeper.Process.Pid}}); th.inVforkWait() {
		t.Error("a sleeping process is seen as a vfork parent")
	}
}
