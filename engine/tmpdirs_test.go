package engine

import (
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
