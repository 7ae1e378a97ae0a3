package testutil

import (
	"fmt"
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

// Snapshot is what the leak check compares before and after a package's
// tests: named network namespaces, links in the root namespace, child
// processes of the test binary, lockstep cgroups.
type Snapshot struct {
	Netns    map[string]bool
	Links    map[string]bool
	Children map[int]string
	Cgroups  map[string]bool
}

// CgroupRoot is where lockstep puts its per-node cgroups on this kind of
// machine; tests use it too.
const CgroupRoot = "/sys/fs/cgroup/unified"

// OtherRun reports whether name (a namespace, link or cgroup) belongs to a
// lockstep cluster owned by another live process — another test package
// running in parallel — so that leak checks leave it out.
func OtherRun(name string) bool {
	name = strings.TrimPrefix(name, "lockstep-")
	if len(name) < 9 || !strings.HasPrefix(name, "lsk") {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/run/lockstep", name[:9], "owner"))
	if err != nil {
		return false
	}
	var pid int
	if _, err := fmt.Sscanf(string(b), "%d", &pid); err != nil || pid == os.Getpid() {
		return false
	}
	if _, mine := descendants(os.Getpid())[pid]; mine {
		return false
	}
	return unix.Kill(pid, 0) == nil
}

// TakeSnapshot records the current state.
func TakeSnapshot() Snapshot {
	s := Snapshot{Netns: map[string]bool{}, Links: map[string]bool{}, Children: map[int]string{}, Cgroups: map[string]bool{}}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			s.Netns[e.Name()] = true
		}
	}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			s.Links[e.Name()] = true
		}
	}
	for pid, cmd := range descendants(os.Getpid()) {
		s.Children[pid] = cmd
	}
	if ents, err := os.ReadDir(CgroupRoot); err == nil {
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), "lockstep") {
				s.Cgroups[e.Name()] = true
			}
		}
	}
	return s
}

// Leaks lists what exists now that did not exist in before.
func (before Snapshot) Leaks() []string {
	now := TakeSnapshot()
	var out []string
	for n := range now.Netns {
		if !before.Netns[n] && !OtherRun(n) {
			out = append(out, "network namespace "+n)
		}
	}
	for n := range now.Links {
		if !before.Links[n] && !OtherRun(n) {
			out = append(out, "link "+n)
		}
	}
	for pid, cmd := range now.Children {
		if _, ok := before.Children[pid]; !ok {
			out = append(out, fmt.Sprintf("process %d (%s)", pid, cmd))
		}
	}
	for n := range now.Cgroups {
		if !before.Cgroups[n] && !OtherRun(n) {
			out = append(out, "cgroup "+n)
		}
	}
	return out
}

// descendants walks /proc for every process whose ancestry leads to root.
func descendants(root int) map[int]string {
	parent := map[int]int{}
	comm := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state byte
		var ppid int
		if _, err := fmt.Sscanf(s[i+2:], "%c %d", &state, &ppid); err != nil {
			continue
		}
		parent[pid] = ppid
		if j := strings.IndexByte(s, '('); j >= 0 {
			comm[pid] = s[j+1 : i]
		}
	}
	out := map[int]string{}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				out[pid] = comm[pid]
				break
			}
		}
	}
	return out
}

// LeakCheckMain runs m and fails the package when its tests leave anything
// behind. Use it as the body of TestMain in every privileged package.
//
// Each extra check is called before the tests and returns the check to run
// after them, which lists what they left of its kind.
func LeakCheckMain(m *testing.M, extra ...func() (after func() []string)) {
	before := TakeSnapshot()
	var afters []func() []string
	for _, e := range extra {
		afters = append(afters, e())
	}
	code := m.Run()
	leaks := before.Leaks()
	for _, a := range afters {
		leaks = append(leaks, a()...)
	}
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: tests leaked %d object(s):\n", len(leaks))
		for _, l := range leaks {
			fmt.Fprintf(os.Stderr, "  %s\n", l)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
