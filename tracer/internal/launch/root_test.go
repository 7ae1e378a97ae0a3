package launch

import (
	"os"
	"path/filepath"
	"testing"
)

// An image's paths resolve inside the image, through its own symbolic
// links (an absolute one included), never into the host's filesystem.
func TestRootPaths(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	for _, d := range []string{"usr/bin", "usr/local/bin", "private/etc", "opt/app"} {
		os.MkdirAll(filepath.Join(lower, d), 0o755)
	}
	os.WriteFile(filepath.Join(lower, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(lower, "usr/bin/data"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(lower, "opt/app/run"), []byte("x"), 0o755)
	os.Symlink("usr/bin", filepath.Join(lower, "bin"))
	os.Symlink("/private/etc", filepath.Join(lower, "etc"))
	os.Symlink("/../../..", filepath.Join(lower, "escape"))
	os.MkdirAll(filepath.Join(upper, "usr/local/bin"), 0o755)
	os.WriteFile(filepath.Join(upper, "usr/local/bin/written"), []byte("x"), 0o755)
	r := &Root{Lower: lower, Upper: upper}

	for _, c := range []struct {
		argv0, dir, path, want string
	}{
		{"tool", "", "", "/usr/bin/tool"},
		{"tool", "", "PATH=/bin", "/bin/tool"},
		{"/bin/tool", "", "", "/bin/tool"},
		{"./run", "/opt/app", "", "/opt/app/run"},
		{"written", "", "", "/usr/local/bin/written"}, // from the writable layer
		{"data", "", "", ""},                          // not executable
		{"sh", "", "PATH=/escape/bin", ""},            // the host's /bin/sh is out of reach
		{"tool", "", "PATH=relative:/nowhere", ""},
	} {
		var env []string
		if c.path != "" {
			env = []string{c.path}
		}
		got, err := r.LookPath(c.argv0, c.dir, env)
		if c.want == "" {
			if err == nil {
				t.Errorf("LookPath(%q, %q, %q) = %q, want not found", c.argv0, c.dir, c.path, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("LookPath(%q, %q, %q) = %q, %v; want %q", c.argv0, c.dir, c.path, got, err, c.want)
		}
	}
	for path, want := range map[string]string{
		"/etc/hosts":    rootMount + "/private/etc/hosts",
		"/escape/etc":   rootMount + "/private/etc", // clamped at the image's root, then its /etc link
		"/proc":         rootMount + "/proc",
		"/run/lockstep": rootMount + "/run/lockstep",
	} {
		if got, err := r.inRoot(path); err != nil || got != want {
			t.Errorf("inRoot(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
}
