// The leak check: what a package's tests leave behind (network namespaces,
// links, child processes, cgroups, and what a package adds) fails it.

package testutil

import (
	"fmt"
	"github.com/lockstep-dev/lockstep/internal/procfs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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
		if !before.Netns[n] && !OtherRun(n) && exists("/run/netns", n) {
			out = append(out, "network namespace "+n)
		}
	}
	for n := range now.Links {
		if !before.Links[n] && !OtherRun(n) && exists("/sys/class/net", n) {
			out = append(out, "link "+n)
		}
	}
	for pid, cmd := range now.Children {
		if _, ok := before.Children[pid]; !ok {
			out = append(out, fmt.Sprintf("process %d (%s)", pid, cmd))
		}
	}
	for n := range now.Cgroups {
		if !before.Cgroups[n] && !OtherRun(n) && exists(CgroupRoot, n) {
			out = append(out, "cgroup "+n)
		}
	}
	return out
}

// exists reports whether dir/name is still there: another run's object seen
// in the snapshot may be gone, with its owner record, by the time OtherRun
// looks (a leak stays).
func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
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
		s, err := procfs.ParseStat(b)
		if err != nil {
			continue
		}
		ppid, ok := s.Field(procfs.FieldPPID)
		if !ok {
			continue
		}
		parent[pid] = int(ppid)
		comm[pid] = s.Comm
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
	if pidsUnseen() {
		// A test run again in a PID namespace of its own (bpf's
		// TestConntrackOwnPidns) cannot tell another package's live
		// cluster from a leak: the owners' pids mean nothing there. The
		// run that started it checks for leaks.
		os.Exit(m.Run())
	}
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

// pidsUnseen reports whether this process is in another PID namespace than
// the one /proc shows, so that the pids /proc lists (and OtherRun reads
// from owner files) are not the ones kill and getpid use here.
func pidsUnseen() bool {
	self, err1 := os.Readlink("/proc/self/ns/pid")
	first, err2 := os.Readlink("/proc/1/ns/pid")
	return err1 == nil && err2 == nil && self != first
}
