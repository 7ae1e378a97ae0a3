package explain

import (
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestHeldBy: a fault's held messages are named by what the fault did:
// down only for a crash or a power cut, paused for a pause, the cut for
// the cuts, and the fault in force for every other kind, by its link for
// a slow or flapping link.
func TestHeldBy(t *testing.T) {
	for _, tc := range []struct {
		fault     sched.Op
		op        string
		how, verb string
	}{
		{sched.Op{Kind: faults.Partition, Node: "s1"}, "partition", "held by the cut", " is held by the cut"},
		{sched.Op{Kind: faults.Link, Node: "s1", Object: "link:s1|s3"}, "link", "held by the cut", " is held by the cut"},
		{sched.Op{Kind: faults.OneWay, Node: "s1"}, "oneway", "held by the cut", " is held by the cut"},
		{sched.Op{Kind: faults.Crash, Node: "s1"}, "crash", "sent while s1 was down", " goes to a node that is down"},
		{sched.Op{Kind: faults.Power, Node: "s1"}, "power", "sent while s1 was down", " goes to a node that is down"},
		{sched.Op{Kind: faults.Pause, Node: "s1"}, "pause", "sent while s1 was paused", " goes to a paused node"},
		{sched.Op{Kind: faults.Slow, Node: "s1", Object: "link:s1|s3"}, "slow", "sent while slow s1|s3 was in force", " is sent while the slow is in force"},
		{sched.Op{Kind: faults.Flap, Node: "s3", Object: "link:s1,s2|s3"}, "flap", "sent while flap s1,s2|s3 was in force", " is sent while the flap is in force"},
		{sched.Op{Kind: faults.Hold, Node: "s1"}, "hold", "sent while hold of s1 was in force", " is sent while the hold is in force"},
		{sched.Op{Kind: faults.ClockJump, Node: "s1"}, "clock", "sent while clock of s1 was in force", " is sent while the clock is in force"},
		{sched.Op{Kind: faults.IOError, Node: "s1"}, "ioerror(write)", "sent while ioerror of s1 was in force", " is sent while the ioerror is in force"},
	} {
		if got := heldBy(&tc.fault); got != tc.how {
			t.Errorf("heldBy(%s) = %q, want %q", tc.fault.Kind, got, tc.how)
		}
		if got := heldVerb(tc.op); got != tc.verb {
			t.Errorf("heldVerb(%q) = %q, want %q", tc.op, got, tc.verb)
		}
	}
}
