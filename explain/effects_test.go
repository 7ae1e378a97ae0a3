package explain

import (
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestHeldBy: a fault's held messages are named by what the fault did:
// down only for a crash or a power cut, paused for a pause, the cut for
// the cuts, and the fault in force for every other kind.
func TestHeldBy(t *testing.T) {
	for _, tc := range []struct {
		kind      sched.Kind
		op        string
		how, verb string
	}{
		{faults.Partition, "partition", "held by the cut", " is held by the cut"},
		{faults.Link, "link", "held by the cut", " is held by the cut"},
		{faults.OneWay, "oneway", "held by the cut", " is held by the cut"},
		{faults.Crash, "crash", "sent while s1 was down", " goes to a node that is down"},
		{faults.Power, "power", "sent while s1 was down", " goes to a node that is down"},
		{faults.Pause, "pause", "sent while s1 was paused", " goes to a paused node"},
		{faults.Slow, "slow", "sent while slow of s1 was in force", " is sent while the slow is in force"},
		{faults.Hold, "hold", "sent while hold of s1 was in force", " is sent while the hold is in force"},
		{faults.ClockJump, "clock", "sent while clock of s1 was in force", " is sent while the clock is in force"},
		{faults.IOError, "ioerror(write)", "sent while ioerror of s1 was in force", " is sent while the ioerror is in force"},
	} {
		if got := heldBy(tc.kind, "s1"); got != tc.how {
			t.Errorf("heldBy(%s) = %q, want %q", tc.kind, got, tc.how)
		}
		if got := heldVerb(tc.op); got != tc.verb {
			t.Errorf("heldVerb(%q) = %q, want %q", tc.op, got, tc.verb)
		}
	}
}
