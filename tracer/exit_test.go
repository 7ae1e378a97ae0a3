package tracer

import (
	"syscall"
	"testing"
)

// TestExitString: an exit reads as a clause of a sentence, signals by
// their names ("killed by killed" was syscall.Signal's description).
func TestExitString(t *testing.T) {
	for _, tc := range []struct {
		e    Exit
		want string
	}{
		{Exit{LPID: "db1/0", Code: 3}, "db1/0 exited with code 3"},
		{Exit{LPID: "db1/0"}, "db1/0 exited with code 0"},
		{Exit{LPID: "client/0", Signal: syscall.SIGKILL}, "client/0 was killed by SIGKILL"},
		{Exit{LPID: "caller/0", Signal: syscall.SIGABRT}, "caller/0 was killed by SIGABRT"},
		{Exit{LPID: "x/1", Signal: syscall.Signal(40)}, "x/1 was killed by signal 40"},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}
