package tracer

import (
	"maps"
	"slices"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestPendingOrder: the pending ops a state lists stay in ID order, the
// same as the sorted IDs of the table, as ops are numbered, released,
// dropped and all forgotten.
func TestPendingOrder(t *testing.T) {
	ot := newOpTable(&Options{}, nil, &Stats{}, nil)
	check := func(when string) {
		t.Helper()
		want := slices.Sorted(maps.Keys(ot.pending))
		var got []uint64
		for _, p := range ot.ordered {
			got = append(got, p.op.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: listed %v, want %v", when, got, want)
		}
	}
	fresh := func(lpids ...string) {
		for _, l := range lpids {
			ot.newChunkOp(&chunk{}, sched.Op{LPID: l, Kind: sched.Deliver}, nil)
		}
		ot.numberFresh()
	}
	fresh("b", "a", "c") // numbered in LPID order: a 1, b 2, c 3
	check("numbered")
	ot.forget(2)
	check("the middle one released")
	fresh("d", "e")
	ot.dropPending(ot.byID(4))
	check("one dropped")
	ot.forget(99)
	check("an unknown ID")
	ot.forget(1)
	ot.forget(5)
	check("both ends")
	ot.forgetAll()
	check("all forgotten")
	fresh("f")
	check("numbered again")
	if len(ot.ordered) != 1 || ot.ordered[0].op.ID != 6 {
		t.Errorf("after all were forgotten, listed %d ops, want op 6 alone", len(ot.ordered))
	}
}
