package faults

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// Every fault kind the scheduler names has its entry: a kind added to
// sched without one would never be drawn, and its op would fail in Chose.
func TestKindDefs(t *testing.T) {
	n := 0
	for k := sched.Crash; !strings.HasPrefix(k.String(), "kind("); k++ {
		n++
		d, ok := kindDefs[k]
		if !ok || d.chose == nil {
			t.Errorf("%v: no entry, or one that cannot be chosen", k)
			continue
		}
		recovery := k == sched.Restart || k == sched.Heal
		if recovery != (d.possible == nil) || recovery != (d.detail == nil) {
			t.Errorf("%v: possible and detail must be set unless it is a recovery", k)
		}
		if (d.holds == nil) != (d.deadline == nil) {
			t.Errorf("%v: a kind that holds ops back needs their deadline too", k)
		}
	}
	if n != len(kindDefs) {
		t.Errorf("%d fault kinds, %d entries", n, len(kindDefs))
	}
}
