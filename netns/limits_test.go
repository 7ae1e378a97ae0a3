package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestNodeLimits: a node's memory and pids limits are set in its cgroups
// (v2, or the v1 hierarchies of a hybrid host), the kernel enforces them
// on its processes, its counters say so, and Close removes every cgroup.
func TestNodeLimits(t *testing.T) {
	requireNet(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed to allocate memory")
	}
	const mem, pids = 64 << 20, 16
	c, err := New(context.Background(), Config{Nodes: []string{"a", "b"},
		Limits: map[string]Limits{"a": {Memory: mem, Pids: pids}},
		Total:  Limits{Memory: 512 << 20, Pids: 256}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	a := c.Node("a")
	dirs := append([]string{a.CgroupDir}, a.LimitCgroups...)
	memFile := limitFile(a, "memory.max", "memory.limit_in_bytes")
	pidsFile := limitFile(a, "pids.max")
	if memFile == "" || pidsFile == "" {
		t.Fatalf("no memory or pids controller for node a (cgroups %v)", dirs)
	}
	if got := readInt(memFile); got != mem {
		t.Errorf("%s = %d, want %d", memFile, got, mem)
	}
	if got := readInt(pidsFile); got != pids {
		t.Errorf("%s = %d, want %d", pidsFile, got, pids)
	}
	// Node b has no pids limit of its own ("max"): its cluster's bounds it.
	if f := limitFile(c.Node("b"), "pids.max"); readInt(f) != 0 {
		t.Errorf("%s: node b has a pids limit of its own", f)
	}
	if f := filepath.Join(filepath.Dir(pidsFile), "..", "pids.max"); readInt(f) != 256 {
		t.Errorf("%s: the cluster's pids limit is not 256", f)
	}

	// run starts a shell in node a's cgroups that then execs script.
	run := func(script string) {
		t.Helper()
		var join strings.Builder
		for _, d := range dirs {
			fmt.Fprintf(&join, "echo $$ > %s/cgroup.procs; ", d)
		}
		out, _ := exec.Command("sh", "-c", join.String()+script).CombinedOutput()
		t.Logf("%s", out)
	}
	before := a.LimitEvents()
	run(`exec python3 -c 'b = bytearray(256 << 20); print(len(b))'`)
	run(`for i in $(seq 40); do sleep 1 & done 2>/dev/null; wait`)
	ev := a.LimitEvents().Sub(before)
	if ev.OOMKills < 1 || ev.MemoryMax < 1 {
		t.Errorf("memory hog: %+v, want an OOM kill at the node's own limit", ev)
	}
	if ev.PidsMax < 1 {
		t.Errorf("fork bomb: %+v, want forks refused at the pids limit", ev)
	}

	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(dirs, filepath.Dir(a.CgroupDir)) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind (%v)", d, err)
		}
	}
}

// TestRetryDump: a dump the kernel interrupted is made again, a few
// times at most; other errors are returned at once.
func TestRetryDump(t *testing.T) {
	other := errors.New("permission denied")
	for _, tc := range []struct {
		name      string
		fails     int   // interrupted dumps before a complete one
		err       error // the failure
		wantCalls int
		wantErr   error
	}{
		{"complete at once", 0, nil, 1, nil},
		{"interrupted twice", 2, netlink.ErrDumpInterrupted, 3, nil},
		{"always interrupted", 1 << 30, netlink.ErrDumpInterrupted, dumpRetries, netlink.ErrDumpInterrupted},
		{"another error", 1 << 30, other, 1, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			v, err := retryDump(func() (string, error) {
				calls++
				if calls <= tc.fails {
					return "partial", tc.err
				}
				return "all " + strconv.Itoa(calls), nil
			})
			if calls != tc.wantCalls {
				t.Errorf("%d dumps, want %d", calls, tc.wantCalls)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err == nil && v != "all "+strconv.Itoa(tc.wantCalls) {
				t.Errorf("got %q from the dump", v)
			}
		})
	}
}

// limitFile is the first of names found in the node's cgroups.
func limitFile(n *Node, names ...string) string {
	for _, d := range append([]string{n.CgroupDir}, n.LimitCgroups...) {
		for _, f := range names {
			if exists(filepath.Join(d, f)) {
				return filepath.Join(d, f)
			}
		}
	}
	return ""
}
