package sockdiag

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnixBoundAt finds a listening Unix socket by its file, and no socket
// for a file that is not one's.
func TestUnixBoundAt(t *testing.T) {
	dir := t.TempDir()
	sock, other := filepath.Join(dir, "sock"), filepath.Join(dir, "file")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open("")
	if err != nil {
		t.Skipf("no sock_diag here: %v", err)
	}
	defer d.Close()
	for _, tc := range []struct {
		path string
		want bool
	}{{sock, true}, {other, false}} {
		var st unix.Stat_t
		if err := unix.Stat(tc.path, &st); err != nil {
			t.Fatal(err)
		}
		got, err := d.UnixBoundAt(st.Dev, st.Ino)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: bound %v, want %v", tc.path, got, tc.want)
		}
	}
}
