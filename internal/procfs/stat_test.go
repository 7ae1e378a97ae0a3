package procfs

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	for _, tt := range []struct {
		line  string
		comm  string
		state byte
		ppid  int64
		bad   bool
	}{
		{line: "1234 (sleep) S 1 1234 1234 0 -1 4194304 99 0 0 0\n", comm: "sleep", state: 'S', ppid: 1},
		{line: "7 (a b) (c)) R 6 7 7 0", comm: "a b) (c)", state: 'R', ppid: 6},
		{line: "9 () Z 2", comm: "", state: 'Z', ppid: 2},
		{line: "9 (x", bad: true},
		{line: "9 (x)", bad: true},
	} {
		s, err := ParseStat([]byte(tt.line))
		if tt.bad {
			if err == nil {
				t.Errorf("%q: no error", tt.line)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.line, err)
			continue
		}
		ppid, ok := s.Field(FieldPPID)
		if s.Comm != tt.comm || s.State != tt.state || !ok || ppid != tt.ppid {
			t.Errorf("%q: got %q %c %d %v, want %q %c %d", tt.line, s.Comm, s.State, ppid, ok, tt.comm, tt.state, tt.ppid)
		}
		if _, ok := s.Field(FieldPolicy); ok {
			t.Errorf("%q: a field past the line's end", tt.line)
		}
	}
}

// TestReadStat reads this thread's own line: the process's line is its
// main thread's, which may sleep while another thread of the Go runtime
// reads it.
func TestReadStat(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := ReadStat(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	if ppid, ok := s.Field(FieldPPID); !ok || int(ppid) != os.Getppid() {
		t.Errorf("ppid %d %v, want %d", ppid, ok, os.Getppid())
	}
	if st, ok := s.Field(FieldStartTime); !ok || st <= 0 {
		t.Errorf("start time %d %v", st, ok)
	}
	if s.State != 'R' {
		t.Errorf("state %c, want R (reading its own stat)", s.State)
	}
}
