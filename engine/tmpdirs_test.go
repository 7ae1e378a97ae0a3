package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// TestSweepTmp: lockstep clean unmounts the {{tmp}} mounts of a lockstep
// that has ended, and keeps a live one's (its own here); unmountStale
// unmounts every one below a directory, and nothing else.
func TestSweepTmp(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	mount := func(name, source string) string {
		at := filepath.Join(dir, name)
		if err := os.Mkdir(at, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(source, at, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(at, unix.MNT_DETACH) })
		return at
	}
	gone := mount("gone", tmpSource+"-999999999-1")
	live := mount("live", tmpOwner())
	other := mount("other", "not-lockstep")
	swept, err := SweepTmp(false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(swept, gone) || slices.Contains(swept, live) || slices.Contains(swept, other) {
		t.Fatalf("swept %v, want %s and not %s or %s", swept, gone, live, other)
	}
	if err := unmountStale(dir); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if unix.Statfs(live, &st) != nil || st.Type == unix.TMPFS_MAGIC {
		t.Errorf("%s is still mounted", live)
	}
	if unix.Statfs(other, &st) != nil || st.Type != unix.TMPFS_MAGIC {
		t.Errorf("%s, not lockstep's, was unmounted", other)
	}
}

// TestDropTmp: a failing trial's {{tmp}} directories are copied to its
// directory, unless DropTmp: then only its trace and the nodes' output
// stay. KeepTmp with DropTmp is refused.
func TestDropTmp(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c", "disk_log")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	text := fmt.Sprintf(`name: drop-tmp
nodes:
  - name: s1
    role: server
    command: [%q, "{{tmp}}/db", "10"]
  - name: c1
    role: client
    command: ["/bin/sh", "-c", "sleep 1; exit 3"]
limits: {virtual_time: 10s, real_time: 60s}
`, bin)
	sp := loadText(t, filepath.Join(t.TempDir(), "drop-tmp.yaml"), text)
	for _, drop := range []bool{false, true} {
		sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: filepath.Join(t.TempDir(), "out"), DropTmp: drop})
		if err != nil {
			t.Fatal(err)
		}
		r := sum.Results[0]
		if !r.Outcome.Kind.IsFailure() {
			t.Fatalf("drop %v: %v, want the client's failure", drop, r.Outcome)
		}
		for _, f := range []string{"trace.jsonl", "s1.out", "c1.out"} {
			if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
				t.Errorf("drop %v: %v", drop, err)
			}
		}
		_, err = os.Stat(filepath.Join(r.Dir, "s1", "db"))
		if drop != os.IsNotExist(err) {
			t.Errorf("drop %v: s1's {{tmp}}/db: %v", drop, err)
		}
	}
	if _, err := Run(t.Context(), sp, RunOptions{Trials: 1, OutDir: filepath.Join(t.TempDir(), "out"), KeepTmp: true, DropTmp: true}); err == nil {
		t.Error("KeepTmp and DropTmp together were not refused")
	}
}
