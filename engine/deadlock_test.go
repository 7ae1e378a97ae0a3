package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
	"github.com/lockstep-dev/lockstep/vclock"
)

// A state with nothing enabled and no deadline is a deadlock only when
// every thread is known to be blocked; a thread still runnable, starting
// or in disk I/O after the grace period makes it lockstep's error, never a
// bug of the system under test.
func TestDeadlockVerdict(t *testing.T) {
	blocked := []*sched.Op{{ID: 4, Node: "a", LPID: "a/0/t0", Kind: sched.Recv, Syscall: "read"}}
	for _, tc := range []struct {
		name      string
		grace     time.Duration
		allHeld   bool
		unsettled []string
		want      OutcomeKind // "" for no verdict yet (the grace goes on)
		detail    string
	}{
		{"all blocked", 0, false, nil, Deadlock, "blocked: #4 a/0/t0 recv(read)"},
		{"one runnable", 0, false, []string{"a/0/t3(tid 77) runnable"}, Error, "a/0/t3(tid 77) runnable"},
		{"one starting", 0, false, []string{"b/0/t1(tid 80) starting"}, Error, "b/0/t1(tid 80) starting"},
		// Every thread stopped by lockstep: nothing can change, no grace.
		{"all held", time.Minute, true, nil, Deadlock, "every thread is stopped by lockstep; blocked: #4"},
		// Some asleep in the kernel: watched for the grace period first.
		{"asleep in the kernel", time.Minute, false, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &spec.Spec{}
			sp.Limits.VirtualTime = time.Minute
			sp.Limits.DeadlockGrace = tc.grace
			tr := &Trial{spec: sp, clk: vclock.New(time.Unix(0, 0), time.Minute), starts: newStarts(nil, nil, nil), timing: newTiming(0, 0, 1)}
			a, err := tr.wait(&tracer.State{Pending: blocked, Unsettled: tc.unsettled, AllHeld: tc.allHeld, Queue: noDeadlines{}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if a.Stop || tr.outcome != nil {
					t.Fatalf("wait = %+v, outcome %v; want the grace period to go on", a, tr.outcome)
				}
				return
			}
			if !a.Stop {
				t.Fatalf("wait = %+v; want a stop", a)
			}
			if tr.outcome.Kind != tc.want || !strings.Contains(tr.outcome.Detail, tc.detail) {
				t.Errorf("outcome %s %q, want %s containing %q", tr.outcome.Kind, tr.outcome.Detail, tc.want, tc.detail)
			}
		})
	}
}

// noDeadlines is a deadline queue with nothing in it: the state of a
// deadlock candidate.
type noDeadlines struct{}

func (noDeadlines) Next([]*sched.Op) (time.Duration, bool) { return 0, false }
func (noDeadlines) List() []tracer.Deadline                { return nil }
