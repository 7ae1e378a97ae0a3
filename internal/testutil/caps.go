// Capability checks: each skips the test, with a message naming what is
// missing, unless this process may do what the test needs.

package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs with effective uid 0.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipping: needs root (run `make test` as root to include it)")
	}
}

var (
	netnsOnce sync.Once
	netnsErr  error
)

// RequireNetns skips the test unless this process may create network
// namespaces.
func RequireNetns(tb testing.TB) {
	tb.Helper()
	RequireRoot(tb)
	netnsOnce.Do(func() { netnsErr = probeNetns() })
	if netnsErr != nil {
		tb.Skipf("skipping: cannot create network namespaces here: %v", netnsErr)
	}
}

func probeNetns() error {
	errc := make(chan error, 1)
	go func() {
		// The thread is left in the new namespace and must die with the
		// goroutine, so never unlock it.
		runtime.LockOSThread()
		errc <- unix.Unshare(unix.CLONE_NEWNET)
	}()
	return <-errc
}

// RequirePtrace skips the test unless this process may trace children.
func RequirePtrace(tb testing.TB) {
	tb.Helper()
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		if strings.TrimSpace(string(b)) == "3" {
			tb.Skip("skipping: ptrace disabled (kernel.yama.ptrace_scope=3)")
		}
	}
}

// RequireBPF skips the test unless this process may load BPF programs.
func RequireBPF(tb testing.TB) {
	tb.Helper()
	RequireRoot(tb)
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		tb.Skip("skipping: kernel has no BTF (/sys/kernel/btf/vmlinux)")
	}
}

// RequireCgroup2 skips the test unless the cgroup v2 hierarchy at root is
// writable.
func RequireCgroup2(tb testing.TB, root string) {
	tb.Helper()
	RequireRoot(tb)
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
		tb.Skipf("skipping: no cgroup v2 hierarchy at %s", root)
	}
}

// RequireBinary skips the test unless path exists (a test program the
// Makefile builds, a toolchain, a JVM).
func RequireBinary(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		if _, lerr := exec.LookPath(path); lerr == nil {
			return
		}
		tb.Skipf("skipping: %s not built or not installed (run `make testdata`)", path)
	}
}

// RequireTrials skips the test unless this process may run lockstep's
// trials: network namespaces, ptrace and lockstep's cgroup v2 hierarchy.
func RequireTrials(tb testing.TB) {
	tb.Helper()
	RequireNetns(tb)
	RequirePtrace(tb)
	RequireCgroup2(tb, CgroupRoot)
}

// RepoPath is a path in the repository, wherever the test runs from: the
// packages' tests share its testdata.
func RepoPath(parts ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", ".."}, parts...)...)
}

// RequireDemo skips the test unless it may run trials of the bundled demo:
// RequireTrials, and the demo's programs built (make testdata).
func RequireDemo(tb testing.TB) {
	tb.Helper()
	RequireTrials(tb)
	RequireBinary(tb, RepoPath("testdata", "bin", "demo", "lockserver"))
}
