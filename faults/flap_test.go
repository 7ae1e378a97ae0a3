package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A flap's phases are down first, then up, in turn, each a tenth of
// max_hold to all of it, and fill its while exactly; the same pick gives
// the same phases.
func TestFlapPhases(t *testing.T) {
	for pick := uint64(0); pick < 50; pick++ {
		while, maxHold := 1300*ms, 400*ms
		down, up := flapPhases(while, maxHold, pick)
		if len(down) == 0 || len(up) < len(down)-1 || len(up) > len(down) {
			t.Fatalf("pick %d: %d down and %d up phases", pick, len(down), len(up))
		}
		at := time.Duration(0)
		for i := range down {
			for _, p := range append([]flapPhase{down[i]}, up[min(i, len(up)):min(i+1, len(up))]...) {
				if p.from != at || p.to <= p.from || p.to-p.from > maxHold || p.to < while && p.to-p.from < maxHold/10 {
					t.Fatalf("pick %d: phase %v after %v", pick, p, at)
				}
				at = p.to
			}
		}
		if at != while {
			t.Fatalf("pick %d: phases end at %v, want %v", pick, at, while)
		}
		d2, u2 := flapPhases(while, maxHold, pick)
		if len(d2) != len(down) || len(u2) != len(up) || d2[0] != down[0] {
			t.Fatalf("pick %d: drawn differently twice", pick)
		}
	}
}

// A flap holds the deliveries and blocking connects across its link while
// the link is down, and only then: other links flow, a non-blocking
// connect goes, what crosses it goes while it is up, and the end of the
// down phase in progress is the only deadline.
func TestFlap(t *testing.T) {
	p := plan(Flap)
	p.MaxHold, p.MaxOutage = 300*ms, 2*time.Second
	links := map[string]bool{}
	for seed := int64(0); seed < 20; seed++ {
		in := New(p, nodes, seed)
		now := 100 * ms
		o, e := inject(t, in, now, Targets{})
		if e.Act != ActHold {
			t.Fatalf("seed %d: a flap asks the engine for %v", seed, e.Act)
		}
		links[o.Object] = true
		a, b, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), "|")
		other := map[string]string{"s1": "s2", "s2": "s3", "s3": "s1"}[a]
		if other == b {
			other = map[string]string{"s1": "s3", "s2": "s1", "s3": "s2"}[a]
		}
		if !strings.HasPrefix(o.Peer, "flaps "+a+"|"+b+" for "+time.Duration(o.Delay).String()+": down ") {
			t.Fatalf("seed %d: show text %q", seed, o.Peer)
		}
		down, up := flapPhases(time.Duration(o.Delay), p.MaxHold, o.Pick)
		for _, d := range down {
			from, to := now+d.from, now+d.to
			if !in.Holds(deliver(a, b), from, addrs) || !in.Holds(deliver(b, a), to-1, addrs) {
				t.Fatalf("seed %d: %s|%s not down in [%v, %v)", seed, a, b, from, to)
			}
			if !in.Holds(connect(a, b), from, addrs) || !in.Holds(connect(b, a), to-1, addrs) {
				t.Fatalf("seed %d: a connect across %s|%s not held in [%v, %v)", seed, a, b, from, to)
			}
			dial := connect(a, b)
			dial.NonBlocking = true
			if in.Holds(dial, from, addrs) {
				t.Fatalf("seed %d: a non-blocking connect across %s|%s held", seed, a, b)
			}
			if in.Holds(deliver(a, other), from, addrs) || in.Holds(connect(other, a), from, addrs) {
				t.Fatalf("seed %d: %s>%s held by the flap of %s|%s", seed, a, other, a, b)
			}
			if dl, ok := in.Deadline(from); !ok || dl != to {
				t.Fatalf("seed %d: deadline at %v is %v %v, want %v", seed, from, dl, ok, to)
			}
		}
		for _, u := range up {
			if in.Holds(deliver(a, b), now+u.from, addrs) || in.Holds(deliver(b, a), now+u.to-1, addrs) || in.Holds(connect(a, b), now+u.from, addrs) {
				t.Fatalf("seed %d: %s|%s held while up in [%v, %v)", seed, a, b, now+u.from, now+u.to)
			}
			// Up, nothing it holds changes before the next down phase
			// starts, and nothing then needs waking.
			if dl, ok := in.Deadline(now + u.from); ok {
				t.Fatalf("seed %d: deadline %v while up at %v", seed, dl, now+u.from)
			}
		}
		if end := now + time.Duration(o.Delay); in.Holds(deliver(a, b), end, addrs) {
			t.Fatalf("seed %d: still flapping at its end", seed)
		}
	}
	if len(links) < 3 {
		t.Fatalf("flapped links %v, want every pair", links)
	}
	// The quiet period ends a flap.
	in := New(p, nodes, 1)
	o, _ := inject(t, in, 0, Targets{})
	a, b, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), "|")
	in.Recover()
	if in.Holds(deliver(a, b), 0, addrs) {
		t.Fatal("held in the quiet period")
	}
}

// A flap is made up by a replay and keeps the trace's phases in a forced
// one: choosing it with another Pick than it was drawn with flaps, and
// shows, that Pick's phases.
func TestFlapReplay(t *testing.T) {
	if got := ReplayOf(Flap); !got.Remake || !got.KeepDraw || got.Recovery {
		t.Fatalf("ReplayOf(Flap) = %+v", got)
	}
	p := plan(Flap)
	p.MaxHold, p.MaxOutage = 300*ms, 2*time.Second
	in := New(p, nodes, 1)
	o := in.Offer(0, Targets{})[0]
	drawn := o.Peer
	o.Pick++ // the trace's, put in by sched.Forced
	if _, err := in.Chose(o, 0); err != nil {
		t.Fatal(err)
	}
	a, b, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), "|")
	down, up := flapPhases(time.Duration(o.Delay), p.MaxHold, o.Pick)
	if want := flapShow(linkEnds{[]string{a}, []string{b}}, time.Duration(o.Delay), down, up); o.Peer != want || o.Peer == drawn {
		t.Fatalf("shows %q (drawn %q), want %q", o.Peer, drawn, want)
	}
	for _, d := range down {
		if !in.Holds(deliver(a, b), d.from, addrs) {
			t.Fatalf("not down at %v, a down phase of the trace's pick", d.from)
		}
	}
}

// TestFlapTraits pins what the engine and a replay do with a flap: the
// injector carries it out alone (ActHold) on messages in flight, gathers
// nothing, and a replay remakes it keeping the trace's draw.
func TestFlapTraits(t *testing.T) {
	d := kindDefs[Flap]
	if d.act != ActHold || d.needs != 0 || !d.onTraffic || d.storage {
		t.Errorf("flap: act %d needs %b onTraffic %v storage %v, want ActHold, none, true, false", d.act, d.needs, d.onTraffic, d.storage)
	}
	if got, want := ReplayOf(Flap), (sched.FaultReplay{Remake: true, KeepDraw: true}); got != want {
		t.Errorf("ReplayOf(Flap) = %+v, want %+v", got, want)
	}
}
