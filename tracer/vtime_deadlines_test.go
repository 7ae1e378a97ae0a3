package tracer

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// The one queue orders the owner's wakes with the tracer's deadlines, and
// with ops held it jumps past the deadlines of enabled (held) ops, which
// have passed: jumping to one would not move the clock and the trial would
// spin (Go's sysmon sleep, due and held, did this).
func TestNextWake(t *testing.T) {
	const ms = time.Millisecond
	wake := func(d Deadline, ok bool) Wake { return Wake{Next: func() (Deadline, bool) { return d, ok }} }
	held := []*sched.Op{{ID: 3}}
	tests := []struct {
		name  string
		wakes []Wake
		skip  []*sched.Op
		want  time.Duration
		ok    bool
	}{
		{"empty", nil, nil, 0, false},
		{"earliest", []Wake{wake(Deadline{At: 300 * ms, What: "futex"}, true), wake(Deadline{At: 20 * time.Microsecond, Op: 3}, true), wake(Deadline{At: 150 * ms, Op: 5}, true)}, nil, 20 * time.Microsecond, true},
		{"held skipped", []Wake{wake(Deadline{At: 20 * time.Microsecond, Op: 3}, true), wake(Deadline{At: 150 * ms, Op: 5}, true), wake(Deadline{At: 300 * ms, What: "futex"}, true)}, held, 150 * ms, true},
		{"only held", []Wake{wake(Deadline{At: 20 * time.Microsecond, Op: 3}, true)}, held, 0, false},
		{"owner has none now", []Wake{wake(Deadline{At: 5 * ms, What: "node start"}, false), wake(Deadline{At: 9 * ms, What: "fault deadline"}, true)}, nil, 9 * ms, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vt := newVtime(&Options{Wakes: tt.wakes}, nil, nil, nil, nil)
			at, ok := queueReader{vt}.Next(tt.skip)
			if at != tt.want || ok != tt.ok {
				t.Fatalf("Next = %v %v, want %v %v", at, ok, tt.want, tt.ok)
			}
			if ds := vt.deadlines(false); len(ds) != 0 {
				t.Fatalf("the owner's wakes listed as the tracer's deadlines: %v", ds)
			}
		})
	}
}

// An owner's wake is read at every read of the queue: when its state
// moves, the queue follows without being told. Only listed wakes are in
// Queue.List, sorted with the rest.
func TestNextWakeFollowsOwner(t *testing.T) {
	at, has := 40*time.Millisecond, true
	vt := newVtime(&Options{Wakes: []Wake{
		{Next: func() (Deadline, bool) { return Deadline{At: at, What: "delay hold end"}, has }},
		{Listed: true, Next: func() (Deadline, bool) { return Deadline{At: 30 * time.Millisecond, LPID: "n2", What: "start"}, true }},
		{Listed: true, Next: func() (Deadline, bool) { return Deadline{At: 30 * time.Millisecond, LPID: "n1", What: "start"}, true }},
	}}, nil, nil, nil, nil)
	q := queueReader{vt}
	if d, ok := q.Next(nil); !ok || d != 30*time.Millisecond {
		t.Fatalf("Next = %v %v, want 30ms", d, ok)
	}
	at = 10 * time.Millisecond
	if d, ok := q.Next(nil); !ok || d != at {
		t.Fatalf("after the owner moved: %v %v, want %v", d, ok, at)
	}
	has = false
	if d, ok := q.Next(nil); !ok || d != 30*time.Millisecond {
		t.Fatalf("after the hold's wake went: %v %v, want 30ms", d, ok)
	}
	ls := q.List()
	if len(ls) != 2 || ls[0].LPID != "n1" || ls[1].LPID != "n2" {
		t.Fatalf("List = %v, want the two starts, n1 first", ls)
	}
}
