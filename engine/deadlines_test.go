package engine

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer"
)

// What counts as a program's own sleep before its thread used the network,
// on the deadlines measured on testdata/specs/pingpong-{c,go,java}.yaml
// and startup-sleep.yaml.
func TestOwnSleep(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name string
		d    tracer.Deadline
		want bool
	}{
		{"C start-up sleep", tracer.Deadline{At: 50 * ms, LPID: "client/0/t0", What: "nanosleep", Kind: sched.Sleep, Thread: "registry"}, true},
		{"Go sysmon", tracer.Deadline{At: 20 * time.Microsecond, LPID: "server1/0/t1", What: "nanosleep", Kind: sched.Sleep, Thread: "pingpong_server"}, false},
		{"Go spin on the main thread", tracer.Deadline{At: 3 * time.Microsecond, LPID: "server1/0/t0", What: "nanosleep", Kind: sched.Sleep, Thread: "pingpong_server"}, false},
		{"JVM VM thread", tracer.Deadline{At: time.Second, LPID: "server1/0/t2", What: "futex", Kind: sched.Sleep, Thread: "VM Thread"}, false},
		{"JVM monitor deflation", tracer.Deadline{At: 250 * ms, LPID: "server1/0/t7", What: "futex", Kind: sched.Sleep, Thread: "Monitor Deflati"}, false},
		{"a named runtime thread as a process's first", tracer.Deadline{At: time.Second, LPID: "x/0/t0", What: "futex", Kind: sched.Sleep, Thread: "GC Thread#0"}, false},
		{"another thread of a C program", tracer.Deadline{At: 50 * ms, LPID: "client/0/t1", What: "nanosleep", Kind: sched.Sleep, Thread: "registry"}, false},
		{"a forked child's main thread", tracer.Deadline{At: 50 * ms, LPID: "client/0.1/t0", What: "clock_nanosleep", Kind: sched.Sleep, Thread: "sh"}, true},
	} {
		if got := ownSleep(tt.d, 0); got != tt.want {
			t.Errorf("%s: ownSleep = %v, want %v", tt.name, got, tt.want)
		}
	}
}
