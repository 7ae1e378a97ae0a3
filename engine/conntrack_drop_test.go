package engine

import (
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestTrackerReportsDrops fills the kernel's ring of connection records
// (a real one, on this process's namespace) without draining it: the next
// take of every job says events were dropped, each job once, since the
// ring is shared and a dropped event may have been any job's; later takes
// with no new drop say none.
func TestTrackerReportsDrops(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireBPF(t)
	tk := newTracker(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if tk == nil {
		t.Skip("connection tracking programs do not load here")
	}
	defer tk.close()
	// The sockets are made on this thread, in its namespace. Not
	// /proc/self's: that is the main thread's, which a test that probed
	// for namespaces from a goroutine the runtime ran there may have left
	// in a namespace of its own.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const here = "/proc/thread-self/ns/net"
	var st unix.Stat_t
	if err := unix.Stat(here, &st); err != nil {
		t.Fatal(err)
	}
	if err := tk.ct.WatchNetns(here); err != nil {
		t.Fatal(err)
	}
	a, b := &job{}, &job{}
	tk.owner[uint32(st.Ino)] = a
	for _, j := range []*job{a, b} {
		if _, dropped, err := tk.take(j); err != nil || dropped {
			t.Fatalf("first take: dropped %v, err %v", dropped, err)
		}
	}

	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.DialTCP("tcp4", nil, l.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A send and a recv event per round, until the ring overflows (a few
	// MiB of records; the cap only stops a ring that never fills).
	one := make([]byte, 1)
	for i := 0; ; i++ {
		if _, err := c.Write(one); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s, one); err != nil {
			t.Fatal(err)
		}
		if i%10000 == 9999 {
			if lost, err := tk.ct.Lost(); err != nil {
				t.Fatal(err)
			} else if lost > 0 {
				break
			}
		}
		if i > 2_000_000 {
			t.Fatal("2,000,000 sends and recvs without a dropped record")
		}
	}

	evs, dropped, err := tk.take(a)
	if err != nil || !dropped {
		t.Fatalf("take after the overflow: dropped %v, err %v", dropped, err)
	}
	if len(evs) == 0 {
		t.Error("the job's events were not returned with the drop")
	}
	if _, dropped, _ := tk.take(b); !dropped {
		t.Error("the other job was not told of the drop")
	}
	for _, j := range []*job{a, b} {
		if _, dropped, _ := tk.take(j); dropped {
			t.Error("a drop was reported twice to one job")
		}
	}
}
