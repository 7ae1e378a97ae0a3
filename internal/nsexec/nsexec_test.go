package nsexec_test

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/nsexec"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func netnsIno(tb testing.TB, path string) uint64 {
	tb.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		tb.Fatal(err)
	}
	return st.Ino
}

// TestDo enters a fresh namespace, sees it from inside, and leaves the
// caller's namespace as it was, also when the code unshares a namespace of
// its own.
func TestDo(t *testing.T) {
	testutil.RequireNetns(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	home := netnsIno(t, "/proc/thread-self/ns/net")
	var fresh string
	if err := nsexec.Do("", func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return err
		}
		// Keep the new namespace alive through a descriptor of this process.
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fresh = "/proc/self/fd/" + strconv.Itoa(fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := netnsIno(t, fresh)
	if want == home {
		t.Fatal("unshare made no new namespace")
	}
	var inside uint64
	if err := nsexec.Do(fresh, func() error {
		inside = netnsIno(t, "/proc/thread-self/ns/net")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if inside != want {
		t.Errorf("inside: namespace %d, want %d", inside, want)
	}
	if got := netnsIno(t, "/proc/thread-self/ns/net"); got != home {
		t.Errorf("caller's thread moved to namespace %d", got)
	}
	boom := errors.New("boom")
	if err := nsexec.Do(fresh, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("f's error: got %v", err)
	}
	if err := nsexec.Do("/nonexistent/ns", func() error { return nil }); err == nil || !os.IsNotExist(errors.Unwrap(err)) {
		t.Errorf("missing namespace: got %v", err)
	}
}
