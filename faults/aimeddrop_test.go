package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// An aimed drop loses the oldest datagram of its kind in flight on its
// link, and only when one is; one that would lose nothing (none in flight,
// the budget spent, outside the window) acts on nothing and is not spent.
func TestAimedDrop(t *testing.T) {
	shape := func(msg string, n int, shape string) bool { return strings.Fields(msg)[0] == shape }
	p := Plan{Kinds: []sched.Kind{Drop}, Nodes: []string{"n1", "n2", "n3"}, Budget: 2, From: 100 * ms, Until: 10 * time.Second, Shape: shape}
	dg := func(id uint64, from, to, msg string) Datagram {
		return Datagram{ID: id, From: from, To: to, Conn: from + ">" + to, Msg: msg, Bytes: len(msg)}
	}
	in := New(p, []string{"n1", "n2", "n3"}, 1)
	in.dgrams = []Datagram{dg(3, "n1", "n2", "HB 1"), dg(4, "n1", "n3", "YES 2"), dg(5, "n3", "n2", "YES 2"), dg(6, "n1", "n2", "YES 3"), dg(7, "n1", "n2", "YES 4")}
	for _, tc := range []struct {
		name     string
		from, to string
		shape    string
		at       time.Duration
		want     uint64 // 0: nothing lost
		budget   int    // left after
		peerHead string
	}{
		{"before the window", "n1", "n2", "YES", 50 * ms, 0, 2, "drops nothing: outside the fault window"},
		{"none of the kind on the link", "n2", "n1", "YES", 200 * ms, 0, 2, "drops nothing: no datagram of its kind is in flight n2>n1"},
		{"the oldest of the kind on the link", "n1", "n2", "YES", 200 * ms, 6, 1, `loses #6, the "YES" datagram n1>n2`},
		{"another link", "n3", "n2", "YES", 300 * ms, 5, 0, `loses #5, the "YES" datagram n3>n2`},
		{"the budget spent", "n1", "n2", "HB", 400 * ms, 0, 0, "drops nothing: the budget is spent"},
	} {
		o := AimedDrop(tc.from, tc.to, tc.shape, `k2 "`+tc.shape+`"`)
		if !o.Made() || o.Kind != Drop {
			t.Fatalf("AimedDrop = %+v, not a made drop", o)
		}
		e, err := in.Chose(o, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		lost := e.Datagram
		if e.Act != ActDrop {
			lost = 0
		}
		if lost != tc.want || in.budget != tc.budget || !strings.HasPrefix(o.Peer, tc.peerHead) {
			t.Errorf("%s: lost datagram %d (act %v), budget %d, %q; want %d, %d, %q", tc.name, lost, e.Act, in.budget, o.Peer, tc.want, tc.budget, tc.peerHead)
		}
		if tc.want == 0 && e.Act == ActDrop {
			t.Errorf("%s: a drop that loses nothing still acts", tc.name)
		}
	}
	if d := sched.Describe(sched.Record{Op: *AimedDrop("n1", "n2", "YES", "x")}); d != "x" {
		t.Errorf("show of an aimed drop: %q, want the text it wrote", d)
	}
}
