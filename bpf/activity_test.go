package bpf

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// sleeper starts cat in cgroup dir, waits until it sleeps on its input,
// and returns the pipe that wakes it.
func sleeper(t *testing.T, dir string) io.WriteCloser {
	in, _ := sleeperPid(t, dir)
	return in
}

// sleeperPid is sleeper, and cat's pid.
func sleeperPid(t *testing.T, dir string) (io.WriteCloser, int) {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	cmd := exec.Command("cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	for i := 0; ; i++ {
		b, _ := os.ReadFile(stat)
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "S" {
			return in, cmd.Process.Pid
		}
		if i == 1000 {
			t.Fatalf("cat never slept: %s", b)
		}
		time.Sleep(time.Millisecond)
	}
}

// cgroupDir makes a cgroup below the test hierarchy, removed at the end.
func cgroupDir(t *testing.T, parts ...string) string {
	t.Helper()
	dir := filepath.Join(append([]string{testutil.CgroupRoot, fmt.Sprintf("lockstep-test-activity-%d", os.Getpid())}, parts...)...)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for d := dir; d != testutil.CgroupRoot; d = filepath.Dir(d) {
			os.Remove(d)
		}
	})
	return dir
}

// TestActivity: a cgroup's count stands still while its tasks sleep and
// moves when one is woken, for tasks in the cgroup itself and in one below
// it, and a cgroup that is not watched counts nothing.
func TestActivity(t *testing.T) {
	a := testActivity(t)
	for _, tc := range []struct {
		name     string
		watch    []string // the cgroup watched
		task     []string // the cgroup the task runs in
		wantMove bool
	}{
		{"the cgroup's own task", []string{"node"}, []string{"node"}, true},
		{"a task two cgroups below", []string{"node"}, []string{"node", "a", "b"}, true},
		{"a task beside it", []string{"node"}, []string{"other"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			watched := cgroupDir(t, tc.watch...)
			in := sleeper(t, cgroupDir(t, tc.task...))
			c, err := a.Watch(watched)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := c.Count()
			time.Sleep(20 * time.Millisecond)
			if got := c.Count(); got != before {
				t.Fatalf("count moved from %d to %d while the task slept", before, got)
			}
			if _, err := in.Write([]byte("x\n")); err != nil {
				t.Fatal(err)
			}
			moved := false
			for i := 0; i < 100 && !moved; i++ {
				time.Sleep(time.Millisecond)
				moved = c.Count() != before
			}
			if moved != tc.wantMove {
				t.Errorf("count moved: %v, want %v (count %d before, %d after)", moved, tc.wantMove, before, c.Count())
			}
		})
	}
	if _, err := a.Watch(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a cgroup v2 directory") {
		t.Errorf("watching a plain directory: %v, want an error saying it is no cgroup", err)
	}
}

// TestActivitySlotsReused: a slot given back is given out again, and the
// lowest level watched follows what is watched.
func TestActivitySlotsReused(t *testing.T) {
	a := testActivity(t)
	deep, shallow := cgroupDir(t, "x", "y"), cgroupDir(t)
	c1, err := a.Watch(deep)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := a.Watch(shallow)
	if err != nil {
		t.Fatal(err)
	}
	var lowest int32
	if err := a.objs.MinLevel.Get(&lowest); err != nil || lowest != 1 {
		t.Errorf("lowest level %d (%v), want 1 (%s)", lowest, err, shallow)
	}
	c2.Close()
	if err := a.objs.MinLevel.Get(&lowest); err != nil || lowest != 3 {
		t.Errorf("lowest level %d (%v), want 3 (%s)", lowest, err, deep)
	}
	c3, err := a.Watch(shallow)
	if err != nil {
		t.Fatal(err)
	}
	if c3.slot != c2.slot {
		t.Errorf("slot %d, want %d given back", c3.slot, c2.slot)
	}
	c1.Close()
	c3.Close()
	if err := a.objs.MinLevel.Get(&lowest); err != nil || lowest != -1 {
		t.Errorf("lowest level %d (%v) with nothing watched, want -1", lowest, err)
	}
}

// TestActivityShared: two counters of one cgroup both count, and closing
// one leaves the other counting.
func TestActivityShared(t *testing.T) {
	a := testActivity(t)
	dir := cgroupDir(t, "node")
	in := sleeper(t, dir)
	c1, err := a.Watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := a.Watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	c1.Close()
	c1.Close() // twice: still one close
	before := c2.Count()
	if _, err := in.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && c2.Count() == before; i++ {
		time.Sleep(time.Millisecond)
	}
	if c2.Count() == before {
		t.Fatal("the second counter of a cgroup stopped when the first closed")
	}
	c2.Close()
	if len(a.slots) != 0 || len(a.levels) != 0 {
		t.Errorf("slots %v, levels %v left after both closed", a.slots, a.levels)
	}
}

// TestActivityTask: of two sleeping tasks of a watched cgroup, the one
// woken moves its own count and the other's stands; a task whose cgroup is
// not watched counts nothing.
func TestActivityTask(t *testing.T) {
	a := testActivity(t)
	dir := cgroupDir(t, "node")
	cg, err := a.Watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	inA, pidA := sleeperPid(t, dir)
	_, pidB := sleeperPid(t, dir)
	inC, pidC := sleeperPid(t, cgroupDir(t, "unwatched"))
	var tc [3]*TaskCounter
	for i, pid := range []int{pidA, pidB, pidC} {
		if tc[i], err = a.WatchTask(pid); err != nil {
			t.Fatal(err)
		}
		defer tc[i].Close()
	}
	if _, err := a.WatchTask(pidA); err == nil {
		t.Error("a task watched twice")
	}
	var before [3]uint64
	for i := range tc {
		before[i] = tc[i].Count()
	}
	inA.Write([]byte("x\n"))
	inC.Write([]byte("x\n"))
	for i := 0; i < 100 && tc[0].Count() == before[0]; i++ {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	if tc[0].Count() == before[0] {
		t.Error("the woken task's count did not move")
	}
	if tc[1].Count() != before[1] {
		t.Errorf("the sleeping task's count moved from %d to %d", before[1], tc[1].Count())
	}
	if tc[2].Count() != before[2] {
		t.Errorf("a task of a cgroup not watched counted: %d to %d", before[2], tc[2].Count())
	}
	tc[1].Close()
	if _, ok := a.taskOf[uint32(pidB)]; ok {
		t.Error("a closed task counter is still watched")
	}
	if got, err := a.WatchTask(pidB); err != nil || got.slot != tc[1].slot {
		t.Errorf("watching again: %v, slot %v, want the slot given back (%d)", err, got, tc[1].slot)
	} else {
		got.Close()
	}
}

// testActivity loads the counters for a test, or skips it where BPF or
// cgroup v2 is missing.
func testActivity(t *testing.T) *Activity {
	t.Helper()
	testutil.RequireBPF(t)
	testutil.RequireCgroup2(t, testutil.CgroupRoot)
	a, err := NewActivity(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
