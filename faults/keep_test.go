package faults

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// drawn is what a chosen fault drew and did: the op's draws and the cut
// it put up.
type drawn struct {
	node, conn, peer, object string
	delay                    int64
	pick                     uint64
	cut, rest                []string
	oneway                   bool
}

// drawOf reads d off a chosen op and its effect. An Object is the op's
// identity ("node:s1", "probe"), which a replay matches, and no draw:
// but a slow's names the link it drew.
func drawOf(o *sched.Op, e Effect) drawn {
	d := drawn{node: o.Node, conn: o.Conn, peer: o.Peer, delay: o.Delay, pick: o.Pick, cut: e.Cut, rest: e.Rest, oneway: e.OneWay}
	if o.Kind == Slow {
		d.object = o.Object
	}
	return d
}

func (d drawn) same(o drawn) bool {
	return d.node == o.node && d.conn == o.conn && d.peer == o.peer && d.object == o.object && d.delay == o.delay &&
		d.pick == o.pick && slices.Equal(d.cut, o.cut) && slices.Equal(d.rest, o.rest) && d.oneway == o.oneway
}

// TestKeepDraw: a fault a replay or a forced run chose keeps what the
// trace's record of it drew (its node, length, direction, link, cut),
// whatever the injector drew this time: offered by the engine, aimed by
// the probe with the recorded answer, or made up from the record alone
// (not offered at all). Without the record, other seeds draw otherwise:
// the test would see a fault that kept nothing.
func TestKeepDraw(t *testing.T) {
	p := func(k sched.Kind) Plan {
		p := plan(k)
		p.MaxOutage, p.MaxHold = 2*time.Second, 500*ms
		return p
	}
	msgHold := p(Hold)
	msgHold.Match, msgHold.HoldDir = []Pattern{{Prefix: []byte{1}}}, HoldDrawn
	d1, d2 := deliver("client", "s1"), deliver("s2", "s3")
	conns := Targets{Conns: []Conn{{From: "client", To: "s1", Conn: d1.Conn}, {From: "s2", To: "s3", Conn: d2.Conn}}}
	for _, tc := range []struct {
		name string
		plan Plan
		tg   Targets
	}{
		{"partition", p(Partition), Targets{}},
		{"crash", p(Crash), Targets{}},
		{"pause", p(Pause), Targets{}},
		{"oneway", p(OneWay), Targets{}},
		{"link", p(Link), Targets{}},
		{"bipartition", func() Plan {
			p := p(Bipartition)
			p.Nodes, p.Shapes = []string{"s1", "s2", "s3", "s4", "s5"}, []string{ShapeIsolate, ShapeMinority, ShapeBridge}
			return p
		}(), Targets{}},
		{"hold of a connection", p(Hold), conns},
		{"hold of a kind", msgHold, Targets{}},
		{"slow", p(Slow), Targets{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append(slices.Clone(tc.plan.Nodes), "client")
			choose := func(seed int64, rec *sched.Op, probe bool, made bool) (*sched.Op, drawn) {
				t.Helper()
				pl := tc.plan
				if probe {
					pl.Probe = []string{"probe"}
				}
				in := New(pl, all, seed)
				in.Aim = func(*sched.Op) (Aiming, error) { return Aiming{Answer: ""}, nil }
				if rec != nil {
					in.Recall = func() *sched.Op { return rec }
				}
				o := in.Offer(time.Second, tc.tg)
				if len(o) != 1 {
					t.Fatalf("seed %d: offer %v", seed, o)
				}
				op := o[0]
				if made {
					c := *rec // what Forced.Extra makes up: the record itself
					op = &c
				}
				e, err := in.Chose(op, time.Second)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				return op, drawOf(op, e)
			}
			differed := false
			for seed := int64(1); seed <= 12; seed++ {
				rec, want := choose(seed, nil, false, false)
				for other := seed + 1; other <= seed+3; other++ {
					if _, got := choose(other, nil, false, false); !got.same(want) {
						differed = true
					}
					for _, way := range []struct {
						name        string
						probe, made bool
					}{{"offered", false, false}, {"aimed by the probe", true, false}, {"made up", false, true}} {
						if _, got := choose(other, rec, way.probe, way.made); !got.same(want) {
							t.Errorf("seed %d, %s with seed %d's record: %+v, want %+v", other, way.name, seed, got, want)
						}
					}
				}
			}
			if !differed {
				t.Fatal("every seed drew the same: the test shows nothing kept")
			}
		})
	}
}

// A made-up cut whose record names no cut of the cluster's nodes (one that
// cut nothing, or a node the spec no longer has) cuts nothing and spends
// nothing, rather than go up around a node drawn afresh.
func TestKeepDrawNoCut(t *testing.T) {
	for _, peer := range []string{"cuts s1>s9", "cuts nothing: s1|s2 shares a link with a cut in force; not spent"} {
		in := New(plan(OneWay), nodes, 1)
		rec := &sched.Op{ID: 1 << 56, LPID: "fault", Kind: OneWay, Node: "s1", Object: "node:s1", Peer: peer, Delay: int64(ms)}
		in.Recall = func() *sched.Op { return rec }
		in.Offer(0, Targets{})
		c := *rec
		e, err := in.Chose(&c, 0)
		if err != nil || e.Cut != nil || len(in.cuts) != 0 || in.budget != 1 || !strings.HasPrefix(c.Peer, "cuts nothing") {
			t.Errorf("record %q: effect %+v, err %v, %d cuts, budget %d, peer %q: want nothing cut or spent", peer, e, err, len(in.cuts), in.budget, c.Peer)
		}
	}
}
