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
// gathers nothing, and a replay makes it up from its record (its link,
// delay and while) when the engine does not offer it.
func TestSlowTraits(t *testing.T) {
	d := kindDefs[Slow]
	if d.act != ActHold || d.needs != 0 || !d.onTraffic || d.storage {
		t.Errorf("slow: act %d needs %b onTraffic %v storage %v, want ActHold, none, true, false", d.act, d.needs, d.onTraffic, d.storage)
	}
	if got := ReplayOf(Slow); got != (sched.FaultReplay{Remake: true}) {
		t.Errorf("ReplayOf(Slow) = %+v, want Remake only", got)
	}
}

// A slow link of one kind (Plan.SlowMatch) holds only the deliveries
// across it whose bytes match; the others cross at once, and what it
// does not hold is no deadline.
func TestSlowKind(t *testing.T) {
	p := plan(Slow)
	p.MaxHold, p.MaxOutage = 300*ms, 2*time.Second
	p.SlowMatch = []Pattern{{Contains: []byte(" data ")}}
	in := New(p, nodes, 1)
	now := 100 * ms
	o, _ := inject(t, in, now, Targets{})
	if !strings.Contains(o.Peer, "(one kind of message)") {
		t.Errorf("a slow of one kind shows %q", o.Peer)
	}
	a, b, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), "|")
	ready := now + 10*ms
	for _, tc := range []struct {
		msg  string
		held bool
	}{
		{"s1 data 4\n", true},
		{"s1 beat 4\n", false},
		{"", false}, // no bytes seen: not of the kind
	} {
		d := deliver(a, b)
		d.ID, d.Msg = 9, tc.msg
		if got := in.Holds(d, ready, addrs); got != tc.held {
			t.Errorf("%q across %s|%s held %v, want %v", tc.msg, a, b, got, tc.held)
		}
	}
}

// A drop of one kind (Plan.DropMatch) is offered only while a datagram of
// that kind is in flight, and discards one of them.
func TestDropKind(t *testing.T) {
	p := plan(Drop)
	p.DropMatch = []Pattern{{Prefix: []byte("ping 2")}}
	in := New(p, nodes, 1)
	ping := func(id uint64, msg string) Datagram {
		return Datagram{ID: id, From: "s1", To: "s2", Conn: "10.0.0.1:4000>10.0.0.2:7000", Msg: msg}
	}
	o := &sched.Op{Kind: Drop, Node: "s1"}
	in.dgrams = []Datagram{ping(3, "ping 1"), ping(4, "ping 3")}
	if possibleDrop(in, o) {
		t.Fatal("a drop of one kind offered with none of it in flight")
	}
	in.dgrams = append(in.dgrams, ping(5, "ping 2"))
	if !possibleDrop(in, o) {
		t.Fatal("no drop offered with a datagram of its kind in flight")
	}
	for range 20 {
		if detailDrop(in, o); o.Delay != 5 {
			t.Fatalf("the drop chose datagram %d, not the one of its kind", o.Delay)
		}
	}
}
