package faults

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/netcut"
	"github.com/lockstep-dev/lockstep/sched"
)

var ips = map[string]string{"s1": "10.0.0.1", "s2": "10.0.0.2", "s3": "10.0.0.3", "client": "10.0.0.4", "s4": "10.0.0.5", "s5": "10.0.0.6"}

// nodeOf names the node of an address of ips.
func nodeOf(a netip.Addr) string {
	for n, ip := range ips {
		if ip == a.String() {
			return n
		}
	}
	return ""
}

// deliver is a delivery from node a to node b.
func deliver(a, b string) *sched.Op {
	return &sched.Op{Kind: sched.Deliver, Node: a, Conn: ips[a] + ":40000>" + ips[b] + ":7000", Peer: ips[b] + ":7000"}
}

// connect is a blocking connect from node a to node b.
func connect(a, b string) *sched.Op {
	return &sched.Op{Kind: sched.Connect, Node: a, Peer: ips[b] + ":7000"}
}

// inject offers and chooses the injection of a one-kind plan at now.
func inject(t *testing.T, in *Injector, now time.Duration, tg Targets) (*sched.Op, Effect) {
	t.Helper()
	offer := in.Offer(now, tg)
	if len(offer) != 1 {
		t.Fatalf("offer %v", offer)
	}
	e, err := in.Chose(offer[0], now)
	if err != nil {
		t.Fatal(err)
	}
	return offer[0], e
}

// flows lists which of the ordered node pairs a delivery crosses now.
func flows(in *Injector, now time.Duration, all []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range all {
		for _, b := range all {
			if a != b {
				out[a+">"+b] = !in.Holds(deliver(a, b), now, nodeOf)
			}
		}
	}
	return out
}

// A one-way cut holds the deliveries from one side to the other and lets
// those the other way go; no connection opens either way; the heal (chosen
// or the quiet period's) names the same sides.
func TestOneWay(t *testing.T) {
	dirs := map[bool]int{}
	for seed := int64(0); seed < 20; seed++ {
		in := New(plan(OneWay), nodes, seed)
		o, e := inject(t, in, 0, Targets{})
		if !e.OneWay || len(e.Cut) == 0 || len(e.Rest) == 0 {
			t.Fatalf("seed %d: effect %+v", seed, e)
		}
		inCut := slices.Contains(e.Cut, o.Node)
		dirs[inCut]++
		for pair, ok := range flows(in, 0, nodes) {
			a, b, _ := strings.Cut(pair, ">")
			want := !(slices.Contains(e.Cut, a) && slices.Contains(e.Rest, b))
			if ok != want {
				t.Fatalf("seed %d: cut %v>%v: delivery %s flows %v", seed, e.Cut, e.Rest, pair, ok)
			}
			if in.Holds(connect(a, b), 0, addrs) == (want && !(slices.Contains(e.Cut, b) && slices.Contains(e.Rest, a))) {
				t.Fatalf("seed %d: cut %v>%v: connect %s held wrongly", seed, e.Cut, e.Rest, pair)
			}
		}
		r := in.Recover()
		if len(r) != 1 || r[0].Kind != Heal || !r[0].OneWay || !slices.Equal(r[0].Cut, e.Cut) || r[0].Node != o.Peer[len("cuts "):] {
			t.Fatalf("seed %d: recovery %+v after %v", seed, r, o)
		}
	}
	if dirs[true] == 0 || dirs[false] == 0 {
		t.Fatalf("the node was always on one side of its one-way cut: %v", dirs)
	}
}

// A link cut stops the two ends both ways and nothing else.
func TestLink(t *testing.T) {
	links := map[string]bool{}
	for seed := int64(0); seed < 30; seed++ {
		in := New(plan(Link), nodes, seed)
		_, e := inject(t, in, 0, Targets{})
		if len(e.Cut) != 1 || len(e.Rest) != 1 || e.OneWay || e.Cut[0] == e.Rest[0] {
			t.Fatalf("seed %d: effect %+v", seed, e)
		}
		x, y := e.Cut[0], e.Rest[0]
		links[min(x, y)+"|"+max(x, y)] = true
		for pair, ok := range flows(in, 0, nodes) {
			if want := pair != x+">"+y && pair != y+">"+x; ok != want {
				t.Fatalf("seed %d: link %s|%s: %s flows %v", seed, x, y, pair, ok)
			}
		}
	}
	if len(links) != 3 {
		t.Fatalf("links drawn %v, want all 3 among s1, s2, s3", links)
	}
}

// Bipartitions drawn from the seed cover their shapes: one node isolated,
// a minority of two of five, and a bridge that both halves still reach.
func TestBipartitionShapes(t *testing.T) {
	all := []string{"s1", "s2", "s3", "s4", "s5", "client"}
	p := Plan{Kinds: []sched.Kind{Bipartition}, Nodes: all[:5], Budget: 1, Until: 10 * time.Second,
		Shapes: []string{ShapeIsolate, ShapeMinority, ShapeBridge}}
	seen := map[string]int{}
	for seed := int64(0); seed < 60; seed++ {
		in := New(p, all, seed)
		o, e := inject(t, in, 0, Targets{})
		shape, _, _ := strings.Cut(o.Peer, " ")
		seen[shape]++
		for _, n := range e.Cut {
			if slices.Contains(e.Rest, n) {
				t.Fatalf("seed %d: %s on both sides: %+v", seed, n, e)
			}
		}
		switch shape {
		case ShapeIsolate:
			if !slices.Equal(e.Cut, []string{o.Node}) || len(e.Rest) != 5 {
				t.Fatalf("seed %d: isolate %s: %v|%v", seed, o.Node, e.Cut, e.Rest)
			}
		case ShapeMinority:
			if len(e.Cut) != 2 || !slices.Contains(e.Cut, o.Node) || len(e.Rest) != 4 || !slices.Contains(e.Rest, "client") {
				t.Fatalf("seed %d: minority with %s: %v|%v", seed, o.Node, e.Cut, e.Rest)
			}
		case ShapeBridge:
			if len(e.Cut) != 2 || len(e.Rest) != 2 || slices.Contains(e.Cut, o.Node) || slices.Contains(e.Rest, o.Node) {
				t.Fatalf("seed %d: bridge %s: %v|%v", seed, o.Node, e.Cut, e.Rest)
			}
			f := flows(in, 0, all)
			for _, n := range append(slices.Clone(e.Cut), e.Rest...) {
				if !f[n+">"+o.Node] || !f[o.Node+">"+n] {
					t.Fatalf("seed %d: bridge %s does not reach %s", seed, o.Node, n)
				}
			}
			if f[e.Cut[0]+">"+e.Rest[0]] || f[e.Rest[1]+">"+e.Cut[1]] {
				t.Fatalf("seed %d: the halves %v and %v still reach each other", seed, e.Cut, e.Rest)
			}
		default:
			t.Fatalf("seed %d: shape %q", seed, shape)
		}
	}
	for _, s := range p.Shapes {
		if seen[s] == 0 {
			t.Fatalf("shape %s never drawn: %v", s, seen)
		}
	}
	// With three nodes a minority is one node: only isolate and bridge.
	p.Nodes = all[:3]
	if got := p.shapes(); !slices.Equal(got, []string{ShapeIsolate, ShapeBridge}) {
		t.Fatalf("shapes of three nodes: %v", got)
	}
}

// A group stays whole in a link cut and a bipartition.
func TestNetworkGroups(t *testing.T) {
	p := plan(Link)
	p.Groups = [][]string{{"s1", "client"}}
	for seed := int64(0); seed < 20; seed++ {
		_, e := inject(t, New(p, nodes, seed), 0, Targets{})
		for _, side := range [][]string{e.Cut, e.Rest} {
			if slices.Contains(side, "s1") != slices.Contains(side, "client") {
				t.Fatalf("seed %d: group split: %v|%v", seed, e.Cut, e.Rest)
			}
		}
	}
}

// A hold holds one connection direction's deliveries until its end while
// every other flows, and its end is a deadline.
func TestHold(t *testing.T) {
	p := plan(Hold)
	p.MaxHold = 500 * ms
	d1, d2 := deliver("client", "s1"), deliver("s1", "client")
	tg := Targets{Conns: []Conn{{From: "client", To: "s1", Conn: d1.Conn}, {From: "s1", To: "client", Conn: d2.Conn}}}
	conns := map[string]bool{}
	for seed := int64(0); seed < 20; seed++ {
		in := New(p, nodes, seed)
		o, _ := inject(t, in, 100*ms, tg)
		conns[o.Conn] = true
		if o.Delay < int64(50*ms) || o.Delay > int64(500*ms) {
			t.Fatalf("seed %d: hold for %v", seed, time.Duration(o.Delay))
		}
		end := 100*ms + time.Duration(o.Delay)
		held, other := d1, d2
		if o.Conn == d2.Conn {
			held, other = d2, d1
		}
		if !in.Holds(held, end-1, addrs) || in.Holds(other, 100*ms, addrs) {
			t.Fatalf("seed %d: hold of %s: held %v, other held %v", seed, o.Conn, in.Holds(held, end-1, addrs), in.Holds(other, 100*ms, addrs))
		}
		if d, ok := in.Deadline(100 * ms); !ok || d != end {
			t.Fatalf("seed %d: deadline %v %v, want %v", seed, d, ok, end)
		}
		if in.Holds(held, end, addrs) {
			t.Fatalf("seed %d: still held at its end", seed)
		}
	}
	if len(conns) != 2 {
		t.Fatalf("held directions %v, want both", conns)
	}
	// Nothing pending, nothing to hold.
	if o := New(p, nodes, 1).Offer(0, Targets{}); len(o) != 0 {
		t.Fatalf("offered %v with no connection", o)
	}
}

// A probe-aimed fault is offered without a node, aimed when chosen at the
// node the probe names (or, naming none the fault can hit, one drawn from
// the seed), and keeps the answer for a replay.
func TestProbeAim(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   []string
	}{
		{"s2", []string{"s2"}},
		{"s3", []string{"s3"}},
		{"", []string{"s1", "s2", "s3"}},
		{"client", []string{"s1", "s2", "s3"}},
	} {
		p := plan(Crash, Partition, Link)
		p.Probe = []string{"probe"}
		got := map[string]bool{}
		for seed := int64(0); seed < 30; seed++ {
			in := New(p, nodes, seed)
			runs := 0
			in.Aim = func(o *sched.Op) (Aiming, error) { runs++; return Aiming{Answer: tc.answer}, nil }
			offer := in.Offer(0, Targets{})
			if len(offer) != 1 || offer[0].Node != "" || offer[0].Object != probeObject {
				t.Fatalf("offer %v", offer)
			}
			if runs != 0 {
				t.Fatal("the probe ran before the injection")
			}
			o := offer[0]
			e, err := in.Chose(o, 0)
			if err != nil {
				t.Fatal(err)
			}
			if runs != 1 || o.Aim != tc.answer || !o.Aimed || o.Node == "" {
				t.Fatalf("answer %q: runs %d, op %+v", tc.answer, runs, o)
			}
			if o.Kind == Partition && !slices.Equal(e.Cut, []string{o.Node}) || o.Kind == Link && e.Cut[0] != o.Node {
				t.Fatalf("answer %q: %v aimed at %s cuts %v", tc.answer, o.Kind, o.Node, e.Cut)
			}
			got[o.Node] = true
		}
		if !slices.Equal(slices.Sorted(maps.Keys(got)), tc.want) {
			t.Fatalf("answer %q: aimed at %v, want %v", tc.answer, got, tc.want)
		}
	}
}

// Groups that follow their node: at each injection a client stands with
// the one server it is connected to, wherever that is now; a client
// connected to two servers, or none, stays with the rest.
func TestFollow(t *testing.T) {
	for _, tc := range []struct {
		peers map[string][]string
		with  string // the server the client must stand with, "" none
	}{
		{map[string][]string{"client": {"s2"}}, "s2"},
		{map[string][]string{"client": {"s3", "s3"}}, "s3"},
		{map[string][]string{"client": {"s1", "s2"}}, ""},
		{nil, ""},
	} {
		for _, k := range []sched.Kind{Partition, OneWay, Link} {
			p := plan(k)
			p.Follow = true
			for seed := int64(0); seed < 20; seed++ {
				_, e := inject(t, New(p, nodes, seed), 0, Targets{Peers: tc.peers})
				for _, side := range [][]string{e.Cut, e.Rest} {
					if tc.with != "" && slices.Contains(side, tc.with) != slices.Contains(side, "client") {
						t.Fatalf("%v, client connected to %v: sides %v|%v", k, tc.peers["client"], e.Cut, e.Rest)
					}
				}
				if tc.with == "" && slices.Contains(e.Cut, "client") && k != OneWay {
					t.Fatalf("%v, client connected to %v: cut off with %v", k, tc.peers["client"], e.Cut)
				}
			}
		}
	}
}

// With overlap 2, two cuts are in force at once: they never share a link,
// each blocks its own pairs, each is healed on its own after its outage,
// and the quiet period heals what is left. With the default, the second
// waits for the first's heal.
func TestOverlappingCuts(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		p := plan(Link, OneWay, Partition)
		p.Budget, p.Overlap, p.MaxOutage = 2, 2, 100*ms
		in := New(p, nodes, seed)
		_, e1 := inject(t, in, 0, Targets{})
		offer := in.Offer(ms, Targets{})
		for step := 2; len(offer) == 0 && step < 50; step++ {
			offer = in.Offer(time.Duration(step)*ms, Targets{}) // drawn again after a clash
		}
		if len(offer) != 1 {
			t.Fatalf("seed %d: no second cut offered beside %+v: %v", seed, e1, offer)
		}
		e2, err := in.Chose(offer[0], 50*ms)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.cuts) != 2 {
			t.Fatalf("seed %d: %d cuts in force after %+v and %+v", seed, len(in.cuts), e1, e2)
		}
		for _, x := range e2.Cut {
			for _, y := range e2.Rest {
				if netcut.Of(in.cuts[0].cut()).Between(x, y) {
					t.Fatalf("seed %d: cuts %s and %s share %s-%s", seed, in.cuts[0].name, in.cuts[1].name, x, y)
				}
			}
		}
		cutBy := func(c *netCut, pair string) bool {
			a, b, _ := strings.Cut(pair, ">")
			return netcut.Of(c.cut()).Stops(a, b)
		}
		first, second := in.cuts[0], in.cuts[1]
		for pair, ok := range flows(in, 60*ms, nodes) {
			if want := !cutBy(first, pair) && !cutBy(second, pair); ok != want {
				t.Fatalf("seed %d: %s flows %v under %s and %s", seed, pair, ok, first.name, second.name)
			}
		}
		// Heal the first cut once its outage is over: the second holds on.
		var heal *sched.Op
		for _, o := range in.Offer(time.Second, Targets{}) {
			if o.Kind == Heal && o.Node == first.name {
				heal = o
			}
		}
		if heal == nil {
			t.Fatalf("seed %d: no heal of %s offered", seed, first.name)
		}
		h, err := in.Chose(heal, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(h.Cut, first.a) || h.OneWay != first.oneway {
			t.Fatalf("seed %d: heal %+v of %s", seed, h, first.name)
		}
		for pair, ok := range flows(in, time.Second, nodes) {
			if want := !cutBy(second, pair); ok != want {
				t.Fatalf("seed %d: after healing %s, %s flows %v under %s", seed, first.name, pair, ok, second.name)
			}
		}
		if r := in.Recover(); len(r) != 1 || r[0].Kind != Heal || r[0].Node != second.name {
			t.Fatalf("seed %d: quiet period %+v, want the heal of %s", seed, r, second.name)
		}
		if len(in.cuts) != 0 {
			t.Fatalf("seed %d: cuts in force after the quiet period", seed)
		}

		p.Overlap = 0
		in = New(p, nodes, seed)
		inject(t, in, 0, Targets{})
		for _, o := range in.Offer(ms, Targets{}) {
			if o.Kind != Heal {
				t.Fatalf("seed %d: overlap 1 offers %v beside a cut in force", seed, o)
			}
		}
	}
}

// TestCutNothingNotSpent: a cut aimed where a cut in force holds its link
// cuts nothing and spends neither the budget nor a trigger.
func TestCutNothingNotSpent(t *testing.T) {
	in := New(Plan{Kinds: []sched.Kind{Link}, Nodes: []string{"n1", "n2", "n3"}, Budget: 2, Overlap: 2, Until: time.Hour}, []string{"n1", "n2", "n3"}, 1)
	in.putCut(&netCut{name: "n1|n2", a: []string{"n1"}, b: []string{"n2"}, shape: "|"})
	in.offerCut = &netCut{a: []string{"n2"}, b: []string{"n1"}, shape: "|"}
	o := &sched.Op{Kind: Link, Node: "n2", Object: "link:n2|n1"}
	in.offer = o
	var e Effect
	if err := choseCut(in, o, time.Second, &e); err != nil {
		t.Fatal(err)
	}
	if in.budget != 2 || len(in.cuts) != 1 || e.Cut != nil || !strings.HasPrefix(o.Peer, "cuts nothing") {
		t.Errorf("budget %d, %d cuts, effect %+v, peer %q: want nothing cut and nothing spent", in.budget, len(in.cuts), e, o.Peer)
	}
	in.offerCut = &netCut{a: []string{"n2"}, b: []string{"n3"}, shape: "|"}
	in.offer = &sched.Op{Kind: Link, Node: "n2"}
	if err := choseCut(in, in.offer, time.Second, &e); err != nil {
		t.Fatal(err)
	}
	if in.budget != 1 || len(in.cuts) != 2 {
		t.Errorf("a cut of a free link: budget %d, %d cuts; want 1 and 2", in.budget, len(in.cuts))
	}
}
