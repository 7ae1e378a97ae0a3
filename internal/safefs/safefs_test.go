package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenFileRefuses: what a node can plant in a directory (a link to a
// file or directory outside, a directory, a FIFO, a way up) fails the
// open, and the file outside is untouched; a regular file is written.
func TestOpenFileRefuses(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	must(t, os.Symlink(victim, filepath.Join(dir, "abs-link")))
	must(t, os.Symlink("../"+filepath.Base(outside)+"/victim", filepath.Join(dir, "rel-link")))
	must(t, os.Symlink(outside, filepath.Join(dir, "dir-link")))
	must(t, os.Mkdir(filepath.Join(dir, "a-dir"), 0o755))
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "plain"), []byte("old contents"), 0o644))
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		name string
		want error
	}{
		{"abs-link", unix.ELOOP},
		{"rel-link", unix.ELOOP},
		{"dir-link/victim", unix.ELOOP},
		{"a-dir", unix.EISDIR},
		{"fifo", ErrNotRegular}, // or ENXIO, when opened for writing with no reader
		{"../" + filepath.Base(outside) + "/victim", unix.EXDEV},
		{victim, unix.EXDEV},
	} {
		for _, flag := range []int{os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_WRONLY | os.O_APPEND | os.O_CREATE, os.O_RDONLY} {
			f, err := d.OpenFile(tc.name, flag, 0o644)
			if err == nil {
				f.Close()
				t.Errorf("%s (flags %#x): opened", tc.name, flag)
				continue
			}
			if !errors.Is(err, tc.want) && !(tc.want == unix.EISDIR && flag == os.O_RDONLY && errors.Is(err, ErrNotRegular)) &&
				!(tc.want == ErrNotRegular && flag != os.O_RDONLY && errors.Is(err, unix.ENXIO)) {
				t.Errorf("%s (flags %#x): %v, want %v", tc.name, flag, err, tc.want)
			}
		}
	}
	for name, want := range map[string]string{"abs-link": "a symbolic link", "a-dir": "a directory", "fifo": "a FIFO", "plain": "a regular file", "none": ""} {
		if got := d.Kind(name); got != want {
			t.Errorf("Kind(%s) = %q, want %q", name, got, want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "host" {
		t.Fatalf("the file outside holds %q", b)
	}
	if err := d.WriteFile("plain", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("made", []byte("made"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"plain": "new", "made": "made"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s holds %q, want %q", name, b, want)
		}
	}
	// The descriptor blocks as asked once open (O_NONBLOCK was the open's).
	f, err := d.OpenFile("plain", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	f.Close()
	if fl&unix.O_NONBLOCK != 0 || fl&unix.O_APPEND == 0 {
		t.Errorf("flags %#o", fl)
	}
}

// TestDirMoved: names resolve from the descriptor, not the path: a
// directory renamed and a link left in its place do not move the writes.
func TestDirMoved(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "trial")
	must(t, os.Mkdir(dir, 0o755))
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	must(t, os.Rename(dir, dir+".moved"))
	must(t, os.Symlink(outside, dir))
	if err := d.WriteFile("trace.jsonl", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "trace.jsonl")); err == nil {
		t.Fatal("written through the link")
	}
	if _, err := os.Stat(filepath.Join(dir+".moved", "trace.jsonl")); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir+".moved", "sub")
	must(t, os.Mkdir(sub, 0o755))
	if s, err := d.Sub("sub"); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
	must(t, os.Symlink(outside, filepath.Join(dir+".moved", "sublink")))
	if _, err := d.Sub("sublink"); !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("a link to a directory: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenInRoot: an absolute link below root resolves inside root, not
// in lockstep's own tree.
func TestOpenInRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, outside), 0o755))
	must(t, os.WriteFile(filepath.Join(root, outside, "mine"), nil, 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "data")))
	d, err := OpenInRoot(root, "/data")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Kind("mine") != "a regular file" {
		t.Fatal("the link was not resolved within the root")
	}
}

// TestMkdirBelow: directories below a root are made, or found, through no
// link: a link a node left on the way (to a directory outside, dangling),
// a file in a directory's place or a way up fails, naming what was there,
// and nothing is made outside.
func TestMkdirBelow(t *testing.T) {
	outside := t.TempDir()
	root := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(root, "link")))
	must(t, os.Symlink(filepath.Join(outside, "none"), filepath.Join(root, "dangling")))
	must(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "real", "inner"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "real", "inner", "trials")))
	for _, tc := range []struct {
		rel  string
		want error
		says string
	}{
		{"link/trials", unix.ENOTDIR, "is a symbolic link"},
		{"dangling", unix.ENOTDIR, "is a symbolic link"},
		{"file/trials", unix.ENOTDIR, "is a regular file"},
		{"real/inner/trials", unix.ENOTDIR, "is a symbolic link"},
		{"../" + filepath.Base(outside), unix.EXDEV, ""},
	} {
		d, err := MkdirBelow(root, tc.rel, 0o755)
		if err == nil {
			d.Close()
			t.Errorf("%s: made", tc.rel)
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %v saying %q", tc.rel, err, tc.want, tc.says)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("made outside the root: %v", ents)
	}
	for _, rel := range []string{"new/a/b", "real/inner/c", "new/a/b"} {
		d, err := MkdirBelow(root, rel, 0o755)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if fi, err := os.Lstat(filepath.Join(root, rel)); err != nil || !fi.IsDir() || d.Path() != filepath.Join(root, rel) {
			t.Errorf("%s: %v (%v), opened as %s", rel, fi, err, d.Path())
		}
		d.Close()
	}
}
