package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A slow link holds each delivery across it until the delivery has waited
// the slow's delay since it was first ready, and only deliveries: a
// connect across it goes at once, other links flow, and the releases are
// deadlines.
func TestSlow(t *testing.T) {
	p := plan(Slow)
	p.MaxHold, p.MaxOutage = 300*ms, 2*time.Second
	for seed := int64(0); seed < 10; seed++ {
		in := New(p, nodes, seed)
		now := 100 * ms
		o, e := inject(t, in, now, Targets{})
		if e.Act != ActHold {
			t.Fatalf("seed %d: a slow asks the engine for %v", seed, e.Act)
		}
		a, b, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), "|")
		other := map[string]string{"s1": "s2", "s2": "s3", "s3": "s1"}[a]
		if other == b {
			other = map[string]string{"s1": "s3", "s2": "s1", "s3": "s2"}[a]
		}
		delay, end := time.Duration(o.Delay), now+time.Duration(o.Pick)
		if dl, ok := in.Deadline(now + 1); ok {
			t.Fatalf("seed %d: deadline %v with nothing held", seed, dl)
		}
		ready := now + 10*ms
		d := deliver(b, a)
		d.ID = 7
		if !in.Holds(d, ready, addrs) || !in.Holds(d, ready+delay-1, addrs) {
			t.Fatalf("seed %d: %s>%s not held for %v from %v", seed, b, a, delay, ready)
		}
		if dl, ok := in.Deadline(ready + 1); !ok || dl != min(ready+delay, end) {
			t.Fatalf("seed %d: deadline %v %v, want %v", seed, dl, ok, min(ready+delay, end))
		}
		if ready+delay < end && in.Holds(d, ready+delay, addrs) {
			t.Fatalf("seed %d: %s>%s held past its delay", seed, b, a)
		}
		if in.Holds(connect(a, b), ready, addrs) || in.Holds(deliver(a, other), ready, addrs) {
			t.Fatalf("seed %d: a connect across %s|%s, or %s>%s, held", seed, a, b, a, other)
		}
		late := deliver(a, b)
		late.ID = 8
		if in.Holds(late, end, addrs) {
			t.Fatalf("seed %d: held at the slow's end %v", seed, end)
		}
	}
}

// TestSlowTraits pins what the engine and a replay do with a slow link:
// the injector carries it out alone (ActHold) on messages in flight,
// gathers nothing, and a replay does not make it up when the engine does
// not offer it.
func TestSlowTraits(t *testing.T) {
	d := kindDefs[Slow]
	if d.act != ActHold || d.needs != 0 || !d.onTraffic || d.storage {
		t.Errorf("slow: act %d needs %b onTraffic %v storage %v, want ActHold, none, true, false", d.act, d.needs, d.onTraffic, d.storage)
	}
	if got := ReplayOf(Slow); got != (sched.FaultReplay{}) {
		t.Errorf("ReplayOf(Slow) = %+v, want the zero FaultReplay", got)
	}
}
