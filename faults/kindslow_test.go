package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A kind-aimed slow delays each message of its kind on its link by its
// delay from when that message was first ready, lets every other message
// through, offers each release as a deadline, ends with its while, and
// slows nothing (spending nothing) when its link and kind are slowed
// already or the budget is spent.
func TestKindSlow(t *testing.T) {
	shape := func(msg string, n int, shape string) bool { return strings.Fields(msg)[0] == shape }
	p := Plan{Kinds: []sched.Kind{Slow}, Nodes: []string{"n1", "n2", "n3"}, Budget: 2, MaxHold: 500 * ms, MaxOutage: time.Second, From: 100 * ms, Until: 10 * time.Second, Shape: shape}
	addr := map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}
	nodeOf := nodesAt(addr)
	deliver := func(id uint64, from, to, msg string) *sched.Op {
		return &sched.Op{ID: id, Kind: sched.Deliver, Node: from, Conn: addr[from] + ":7000>" + addr[to] + ":7000", Msg: msg, Bytes: len(msg)}
	}
	in := New(p, []string{"n1", "n2", "n3"}, 1)
	o := KindSlow(sched.AnyNode, "n2", "APPEND", `k3 "APPEND"`, 100*ms, 400*ms)
	if !o.Made() || o.Kind != Slow || o.Node != "n2" || o.Pick != uint64(400*ms) {
		t.Fatalf("KindSlow = %+v, not a made slow into n2", o)
	}
	if _, err := in.Chose(o, 200*ms); err != nil {
		t.Fatal(err)
	}
	if in.budget != 1 || o.Peer != `k3 "APPEND"` {
		t.Fatalf("after the slow: budget %d, peer %q", in.budget, o.Peer)
	}
	if _, ok := in.Deadline(200 * ms); ok {
		t.Error("a deadline while the slow holds nothing")
	}
	for _, tc := range []struct {
		id       uint64
		at       time.Duration
		from, to string
		msg      string
		want     bool
	}{
		{1, 250 * ms, "n1", "n2", "APPEND 4", true}, // first ready at 250ms: until 350ms
		{2, 250 * ms, "n1", "n2", "HB", false},
		{3, 250 * ms, "n3", "n2", "APPEND 4", true}, // every link into n2
		{4, 250 * ms, "n2", "n1", "APPEND 4", false},
		{1, 349 * ms, "n1", "n2", "APPEND 4", true},
		{1, 350 * ms, "n1", "n2", "APPEND 4", false}, // waited its delay
		{5, 590 * ms, "n1", "n2", "APPEND 5", true},
		{5, 600 * ms, "n1", "n2", "APPEND 5", false}, // the slow's end
	} {
		if tc.id == 5 && tc.at == 590*ms {
			if d, ok := in.Deadline(300 * ms); !ok || d != 350*ms {
				t.Errorf("deadline %v %v, want message 3's release at 350ms", d, ok)
			}
		}
		if got := in.Holds(deliver(tc.id, tc.from, tc.to, tc.msg), tc.at, nodeOf); got != tc.want {
			t.Errorf("at %v #%d %s>%s %q: held %v, want %v", tc.at, tc.id, tc.from, tc.to, tc.msg, got, tc.want)
		}
	}
	// Slowed again while in force: nothing, not spent; then the budget.
	in = New(p, []string{"n1", "n2", "n3"}, 1)
	for _, at := range []time.Duration{200 * ms, 250 * ms} {
		if _, err := in.Chose(KindSlow("n1", "n2", "APPEND", "", 100*ms, 400*ms), at); err != nil {
			t.Fatal(err)
		}
	}
	again := KindSlow("n1", "n3", "APPEND", "", 100*ms, 400*ms)
	in.Chose(again, 300*ms)
	spent := KindSlow("n1", "n3", "HB", "", 100*ms, 400*ms)
	in.Chose(spent, 300*ms)
	if in.budget != 0 || !strings.HasPrefix(spent.Peer, "slows nothing: the budget is spent") {
		t.Errorf("budget %d after two slows and one that did nothing; the third says %q", in.budget, spent.Peer)
	}
}
