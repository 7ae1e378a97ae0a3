package faults

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// Each outage (a crash, a partition, a slow or flapping link) and each
// pause lasts from its shortest (faults.min_outage, faults.min_pause) to
// its longest; a plan without a shortest draws what it always drew, a
// tenth of the longest to all of it, from the same seed.
func TestShortest(t *testing.T) {
	for _, tc := range []struct {
		kind sched.Kind
		long func(o *sched.Op) time.Duration
	}{
		{Crash, func(o *sched.Op) time.Duration { return time.Duration(o.Delay) }},
		{Partition, func(o *sched.Op) time.Duration { return time.Duration(o.Delay) }},
		{Flap, func(o *sched.Op) time.Duration { return time.Duration(o.Delay) }},
		{Slow, func(o *sched.Op) time.Duration { return time.Duration(o.Pick) }},
		{Pause, func(o *sched.Op) time.Duration { return time.Duration(o.Delay) }},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			base := plan(tc.kind)
			base.MaxHold, base.MaxOutage, base.MaxPause = 300*ms, 90*time.Second, 90*time.Second
			least := base
			least.MinOutage, least.MinPause = 75*time.Second, 75*time.Second
			tenth := base
			tenth.MinOutage, tenth.MinPause = 9*time.Second, 9*time.Second
			var below bool
			for seed := int64(0); seed < 50; seed++ {
				o := firstOffer(t, base, seed)
				d := tc.long(o)
				below = below || d < 75*time.Second
				if d < 9*time.Second || d > 90*time.Second {
					t.Fatalf("seed %d: without a shortest, %v outside 9s..90s", seed, d)
				}
				if got := tc.long(firstOffer(t, tenth, seed)); got != d {
					t.Fatalf("seed %d: a shortest of a tenth drew %v, without one %v", seed, got, d)
				}
				if got := tc.long(firstOffer(t, least, seed)); got < 75*time.Second || got > 90*time.Second {
					t.Fatalf("seed %d: with a shortest of 75s, %v", seed, got)
				}
			}
			if !below {
				t.Fatal("without a shortest no draw was under 75s: the test shows nothing")
			}
		})
	}
}

// firstOffer is the injection a fresh injector on p first offers, with its
// details drawn.
func firstOffer(t *testing.T, p Plan, seed int64) *sched.Op {
	t.Helper()
	offers := newEager(p, nodes, seed).Offer(100*ms, Targets{})
	if len(offers) != 1 || offers[0].Kind != p.Kinds[0] {
		t.Fatalf("seed %d: offered %v", seed, offers)
	}
	return offers[0]
}

// Lasts names the kinds whose length alone ends them and that a forced run
// keeps from the record, each with the span the plan draws it from, and
// only those of the plan: a crash, a cut of the network or a power cut
// the outage's, a pause the pause's. A crash without max_outage stays
// down, and a slow or flapping link draws its phases from its length too.
func TestLasts(t *testing.T) {
	p := Plan{
		Kinds:     []sched.Kind{Crash, Pause, Partition, OneWay, Link, Bipartition, Power, Slow, Flap, Hold, ClockJump},
		MaxOutage: 10 * time.Second, MinOutage: 4 * time.Second, MaxPause: 2 * time.Second,
	}
	for _, tc := range []struct {
		kind        sched.Kind
		plan        Plan
		least, most time.Duration
		ok          bool
	}{
		{Crash, p, 4 * time.Second, 10 * time.Second, true},
		{Partition, p, 4 * time.Second, 10 * time.Second, true},
		{OneWay, p, 4 * time.Second, 10 * time.Second, true},
		{Link, p, 4 * time.Second, 10 * time.Second, true},
		{Bipartition, p, 4 * time.Second, 10 * time.Second, true},
		{Power, p, 4 * time.Second, 10 * time.Second, true},
		{Pause, p, 200 * time.Millisecond, 2 * time.Second, true},
		{Slow, p, 0, 0, false},
		{Flap, p, 0, 0, false},
		{Hold, p, 0, 0, false},
		{ClockJump, p, 0, 0, false},
		{Heal, p, 0, 0, false},
		{Crash, Plan{Kinds: []sched.Kind{Crash}}, 0, 0, false},
		{Crash, Plan{Kinds: []sched.Kind{Partition}, MaxOutage: time.Second}, 0, 0, false},
	} {
		least, most, ok := tc.plan.Lasts(tc.kind)
		if ok != tc.ok || ok && (least != tc.least || most != tc.most) {
			t.Errorf("%s of %v: %v, %v, %v; want %v, %v, %v", tc.kind, tc.plan.Kinds, least, most, ok, tc.least, tc.most, tc.ok)
		}
	}
}
