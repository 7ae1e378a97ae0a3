package execpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Find looks through PATH, the working directory and both layers, and
// never leaves the root: a symlink to an absolute path resolves inside it.
func TestFind(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	file := func(root, p string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	file(lower, "bin/server", 0o755)
	file(lower, "bin/notes", 0o644)
	file(lower, "opt/app/run", 0o755)
	file(upper, "usr/local/bin/added", 0o755)
	if err := os.MkdirAll(filepath.Join(lower, "usr/bin/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Absolute inside the image: /bin/server there, not the host's.
	if err := os.Symlink("/bin/server", filepath.Join(lower, "bin/alias")); err != nil {
		t.Fatal(err)
	}
	// On the host this target exists; inside the image it does not.
	if err := os.Symlink("/bin/sh", filepath.Join(lower, "bin/hostsh")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, argv0, dir string
		env              []string
		want             string // "" for not found
	}{
		{"on the default PATH", "server", "", nil, "/bin/server"},
		{"in the upper layer", "added", "", nil, "/usr/local/bin/added"},
		{"absolute", "/opt/app/run", "", nil, "/opt/app/run"},
		{"relative to the working directory", "./run", "/opt/app", nil, "/opt/app/run"},
		{"relative without a directory", "opt/app/run", "", nil, "/opt/app/run"},
		{"through the env's PATH", "run", "", []string{"PATH=/opt/app"}, "/opt/app/run"},
		{"not on the env's PATH", "server", "", []string{"PATH=/opt/app"}, ""},
		{"symlink resolved in the root", "alias", "", nil, "/bin/alias"},
		{"symlink out of the root", "hostsh", "", nil, ""},
		{"not executable", "notes", "", nil, ""},
		{"a directory", "dir", "", nil, ""},
		{"absent", "missing", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Find(tc.argv0, tc.dir, tc.env, upper, lower)
			if tc.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Find(%q) = %q, %v; want ErrNotFound", tc.argv0, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Find(%q) = %q, %v; want %q", tc.argv0, got, err, tc.want)
			}
		})
	}
}
