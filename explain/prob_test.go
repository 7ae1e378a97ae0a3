package explain

import (
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestPrefixRemakes: a prefix makes up the recorded fault the engine does
// not offer exactly when a replay would (faults.ReplayOf): the remade
// kinds (crash, power, ioerror, stall, flap, ...), never a recovery or a
// kind that needs what only the engine knows is there (a reset's
// connection, a corruption's down node).
func TestPrefixRemakes(t *testing.T) {
	for _, k := range faults.Kinds() {
		p := &sched.Branch{Faults: faults.ReplayOf, Prefix: []sched.Record{{Op: sched.Op{ID: 1 << 52, Kind: k, Node: "s1", LPID: "fault", Object: "node:s1"}}}}
		got := p.Extra(0, nil)
		if want := faults.ReplayOf(k).Remake; (len(got) == 1) != want {
			t.Errorf("%s: Extra gave %v, want a remade op: %v", k, got, want)
		}
		if len(got) == 1 && (got[0].Kind != k || got[0].Node != "s1") {
			t.Errorf("%s: remade %v", k, got[0])
		}
	}
	if got := (&sched.Branch{Prefix: []sched.Record{{Op: sched.Op{Kind: sched.Advance, At: 5, Delay: 5}}}}).Extra(2, nil); len(got) != 1 || got[0].Delay != 3 {
		t.Errorf("advance to 5 at 2: %v", got)
	}
	if got := (&sched.Branch{Prefix: []sched.Record{{Op: sched.Op{Kind: sched.Advance, At: 5}}}}).Extra(5, nil); got != nil {
		t.Errorf("advance to 5 at 5: %v", got)
	}
}
