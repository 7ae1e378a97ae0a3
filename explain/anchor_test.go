package explain

import (
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestMessageAnchors: a fault that follows a sleep or a poll is anchored
// on the last message before it instead; one that follows a message keeps
// its anchor, and so does one with an advance between it and the message
// before it; advances and holds are not moved.
func TestMessageAnchors(t *testing.T) {
	deliver := func(data string) sched.Record {
		return sched.Record{Op: sched.Op{Kind: sched.Deliver, Node: "r1", LPID: "r1/0/t0", Object: "inbox:c1", Conn: "10.77.0.1:6379>10.77.0.2:32768"}, Data: []byte(data)}
	}
	sleep := sched.Record{Op: sched.Op{Kind: sched.Sleep, Node: "c1", LPID: "c1/0/t1"}}
	poll := sched.Record{Op: sched.Op{Kind: sched.Poll, Node: "r1", LPID: "r1/0/t0"}}
	empty := sched.Record{Op: sched.Op{Kind: sched.Deliver, Node: "c1", LPID: "c1/0/t0", Object: "inbox:r1"}}
	advance := sched.Record{Op: sched.Op{Kind: sched.Advance, Node: "c1", LPID: "c1/0/t0", At: 5}}
	power := sched.Record{Op: sched.Op{Kind: faults.Power, Node: "r1", LPID: "fault", Object: "node:r1"}}
	for _, tc := range []struct {
		name string
		recs []sched.Record // the last is the decision's op
		want int            // the index of the op it is anchored after
	}{
		{"after a sleep", []sched.Record{deliver("+OK\r\n"), sleep, poll, power}, 0},
		{"after a message", []sched.Record{sleep, deliver("+OK\r\n"), power}, 1},
		{"an empty delivery is no message", []sched.Record{deliver("$1\r\n"), empty, sleep, power}, 0},
		{"an advance between", []sched.Record{deliver("+OK\r\n"), advance, sleep, power}, 2},
		{"no message before", []sched.Record{sleep, poll, power}, 1},
		{"an advance is not moved", []sched.Record{deliver("+OK\r\n"), sleep, advance}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := append([]sched.Record(nil), tc.recs...)
			for i := range recs {
				recs[i].Step = i + 1
			}
			keys := sched.Keys(recs, nil)
			last := len(recs) - 1
			d := sched.Decision{Kind: sched.InjectDecision, Key: keys[last], Op: recs[last].Op, Step: recs[last].Step, After: &keys[last-1], AfterStep: recs[last-1].Step}
			hold := sched.Decision{Kind: sched.HoldDecision, Key: keys[0], Op: recs[0].Op, Step: 1, After: &keys[last-1], AfterStep: recs[last-1].Step}
			got, moved := messageAnchors([]sched.Decision{hold, d}, recs, nil)
			if *got[0].After != keys[last-1] {
				t.Errorf("the hold was moved after %v", *got[0].After)
			}
			if *got[1].After != keys[tc.want] || got[1].AfterStep != recs[tc.want].Step {
				t.Errorf("anchored after step %d (%v), want step %d (%v)", got[1].AfterStep, *got[1].After, recs[tc.want].Step, keys[tc.want])
			}
			if want := tc.want != last-1; (moved == 1) != want {
				t.Errorf("moved %d", moved)
			}
			if *d.After != keys[last-1] {
				t.Errorf("the decisions given were changed")
			}
		})
	}
}
