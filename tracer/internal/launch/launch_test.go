package launch

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// run spawns cfg, seizes it and resumes every stop until it exits; it
// returns the exit status and the syscalls it stopped at (seccomp stops).
func run(t *testing.T, cfg Config) (code int, stops []int) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequirePtrace(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ch, err := Spawn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ptrace.Seize(ch.Pid); err != nil {
		t.Fatal(err)
	}
	if err := ch.Release(); err != nil {
		t.Fatal(err)
	}
	for {
		pid, st, err := ptrace.Wait(-1, ptrace.Tracees)
		if err != nil {
			t.Fatal(err)
		}
		switch st.Kind() {
		case ptrace.Exited:
			if pid == ch.Pid {
				if f := ch.Failure(); f != nil {
					t.Fatalf("setup failed: %v", f)
				}
				return st.ExitCode(), stops
			}
		case ptrace.Killed:
			if pid == ch.Pid {
				t.Fatalf("killed by %v", st.Signal())
			}
		case ptrace.SeccompStop:
			var r ptrace.Regs
			if ptrace.GetRegs(pid, &r) == nil {
				stops = append(stops, r.Syscall())
			}
			ptrace.Cont(pid, 0)
		case ptrace.SignalStop, ptrace.StepTrap:
			ptrace.Cont(pid, int(st.Signal()))
		default:
			ptrace.Cont(pid, 0)
		}
	}
}

func TestSpawnUnderFilter(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	filter := Filter([]uint32{unix.SYS_WRITE})
	code, stops := run(t, Config{Path: "/bin/echo", Argv: []string{"echo", "hello"}, Stdout: out, Filter: filter, ClockFd: -1})
	if code != 0 {
		t.Fatalf("echo exited %d", code)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "hello\n" {
		t.Fatalf("stdout %q", b)
	}
	if len(stops) == 0 || stops[len(stops)-1] != unix.SYS_WRITE {
		t.Fatalf("seccomp stops %v, want the gated write", stops)
	}
	for _, nr := range stops {
		if nr != unix.SYS_WRITE {
			t.Fatalf("stopped at syscall %d, which is not gated", nr)
		}
	}
}

func TestFilterDenies(t *testing.T) {
	dir := t.TempDir()
	errf, err := os.Create(filepath.Join(dir, "err"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	// As root, mount would succeed; the filter makes it EPERM.
	code, _ := run(t, Config{Path: "/bin/mount", Argv: []string{"mount", "-t", "tmpfs", "none", dir},
		Stderr: errf, Filter: Filter(nil), ClockFd: -1})
	b, _ := os.ReadFile(errf.Name())
	if code == 0 || !strings.Contains(strings.ToLower(string(b)), "permission denied") {
		unix.Unmount(dir, unix.MNT_DETACH)
		t.Fatalf("mount exited %d: %q, want permission denied", code, b)
	}
}

func TestSandboxCaps(t *testing.T) {
	drop, err := capsToDrop([]int{unix.CAP_NET_ADMIN})
	if err != nil {
		t.Fatal(err)
	}
	dropped := map[uintptr]bool{}
	for _, c := range drop {
		dropped[c] = true
	}
	for _, c := range append(DefaultCaps(), unix.CAP_NET_ADMIN) {
		if dropped[uintptr(c)] {
			t.Errorf("capability %d is dropped but should be kept", c)
		}
	}
	for _, c := range []int{unix.CAP_SYS_ADMIN, unix.CAP_SYS_PTRACE, unix.CAP_DAC_OVERRIDE} {
		if !dropped[uintptr(c)] {
			t.Errorf("capability %d is kept but should be dropped", c)
		}
	}
}
