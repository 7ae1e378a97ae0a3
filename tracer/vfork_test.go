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
	// The parent sleeps uninterruptibly for a moment before it vforks too
	// (paging its image in on a loaded machine): look until it is in the
	// vfork wait for its child, which lasts the child's 3 s.
	for i := 0; !th.inVforkWait(); i++ {
		if i == 200 {
			s, _, _ := th.kernelState()
			w, _ := readSmall("/proc/" + strconv.Itoa(th.tid) + "/wchan")
			t.Fatalf("a vfork parent waiting for its child (state %c, wait channel %q) is not seen as one", s, w)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s, _, ok := th.kernelState(); !ok || s != 'D' {
		t.Errorf("a vfork parent seen in its wait sleeps in state %c, want D", s)
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
