package faults

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/netcut"
	"github.com/lockstep-dev/lockstep/sched"
)

// Bipartition shapes (Plan.Shapes).
const (
	// ShapeIsolate cuts one node (its group) from all others.
	ShapeIsolate = "isolate"
	// ShapeMinority cuts a minority of the plan's nodes from the majority.
	ShapeMinority = "minority"
	// ShapeBridge splits the others in two halves that cannot reach each
	// other but both reach the bridge node (Jepsen's "bridge").
	ShapeBridge = "bridge"
)

// netCut is the network cut in force: what A sends to B is cut, and
// unless oneway what B sends to A too. Nodes in neither side reach both.
type netCut struct {
	// name names the cut in its heal op (and in its recovery's keys).
	name   string
	a, b   []string
	oneway bool
	// rest says b is every node not in a, settled at the injection (with
	// the nodes that follow a's); swap that a and b change places then (a
	// one-way cut of what the others send).
	rest, swap bool
	// shape is a bipartition's, or the cut's sign: ">" one way, "|" both.
	shape string
}

// cut is what the cut holds, link by link.
func (c *netCut) cut() netcut.Cut[string] {
	return netcut.Cut[string]{A: c.a, B: c.b, OneWay: c.oneway}
}

// putCut puts c in force, in the list of cuts and its links.
func (in *Injector) putCut(c *netCut) {
	in.cuts = append(in.cuts, c)
	in.cutLinks.Put(c.cut()) // books only: no firewall, no error
}

// liftCut ends the i-th cut in force and returns it.
func (in *Injector) liftCut(i int) *netCut {
	c := in.cuts[i]
	in.cuts = slices.Delete(in.cuts, i, i+1)
	in.cutLinks.Lift(c.cut()) // books only: no error
	return c
}

// Conn is a connection direction with deliveries pending, which a hold may
// hold back.
type Conn struct {
	From, To string // the sending and receiving nodes
	Conn     string // "src>dst", the same in every run of a seed
}

// units are the sides the plan's nodes stand on: each node's group (or the
// node alone), once, in plan order. Every cut keeps a unit whole.
func (p Plan) units() [][]string {
	var out [][]string
	for _, n := range p.Nodes {
		s := p.side(n)
		if !slices.ContainsFunc(out, func(u []string) bool { return slices.Equal(u, s) }) {
			out = append(out, s)
		}
	}
	return out
}

// shapes are the bipartition shapes the plan allows with its node count.
func (p Plan) shapes() []string {
	n := len(p.units())
	var out []string
	for _, s := range p.Shapes {
		switch {
		case s == ShapeMinority && (n-1)/2 < 2: // below 5 it is an isolation
		case s == ShapeBridge && n < 3:
		default:
			out = append(out, s)
		}
	}
	return out
}

// cutKind is the entry of a network cut of the network (oneway, link,
// bipartition): build draws its cut around the node's unit at offer time,
// kept as in.offerCut until chosen.
func cutKind(possible func(in *Injector, node string) bool, build func(in *Injector, unit []string) *netCut) kindDef {
	return kindDef{
		possible: func(in *Injector, o *sched.Op) bool { return in.cutRoom() && possible(in, o.Node) },
		detail: func(in *Injector, o *sched.Op) {
			c := build(in, in.plan.side(o.Node))
			detailOutage(in, o)
			in.offerCut = c
		},
		chose:     choseCut,
		keep:      keepCut,
		lasts:     outageSpan,
		onTraffic: true,
		act:       ActCut,
		// Made up from its record (keepCut), as a partition is.
		replay: sched.FaultReplay{Remake: true},
	}
}

// The cuts of the network beside a partition, and the hold.
const (
	// OneWay cuts the messages from one side to the other while those the
	// other way flow (healed by Heal).
	OneWay sched.Kind = "oneway"
	// Link cuts the link between two nodes (their groups), both ways,
	// while every other link flows (healed by Heal).
	Link sched.Kind = "link"
	// Bipartition splits the nodes in two, drawn among shapes: one node
	// isolated, a minority from a majority, or two halves joined by a
	// bridge node that sees both (healed by Heal).
	Bipartition sched.Kind = "bipartition"
	// Hold holds the deliveries of one connection direction for a while
	// (its Delay) and then lets them go, while every other flows.
	Hold sched.Kind = "hold"
)

func init() {
	define(OneWay, oneWayKind)
	define(Link, linkKind)
	define(Bipartition, bipartitionKind)
	define(Hold, holdKind)
}

var oneWayKind = cutKind(
	func(in *Injector, node string) bool { return len(in.others(in.plan.side(node))) > 0 },
	func(in *Injector, unit []string) *netCut {
		c := &netCut{a: unit, rest: true, oneway: true, shape: ">"}
		// The node hears nothing rather than is not heard.
		c.swap = in.r.IntN(2) == 0
		return c
	})

var linkKind = cutKind(
	func(in *Injector, _ string) bool { return len(in.plan.units()) >= 2 },
	func(in *Injector, unit []string) *netCut {
		var others [][]string
		for _, u := range in.plan.units() {
			if !slices.Equal(u, unit) {
				others = append(others, u)
			}
		}
		return &netCut{a: unit, b: others[in.r.IntN(len(others))], shape: "|"}
	})

var bipartitionKind = cutKind(
	func(in *Injector, _ string) bool { return len(in.plan.shapes()) > 0 },
	func(in *Injector, unit []string) *netCut {
		shapes := in.plan.shapes()
		return in.bipartition(shapes[in.r.IntN(len(shapes))], unit)
	})

// holdKind holds one connection direction, or one kind of message
// (Plan.Match; match.go), for a while.
//
// Its record is all a replay needs to make it up: a connection direction
// by its addresses (which holds nothing where that connection is not), or
// a node's messages one way.
var holdKind = kindDef{possible: possibleHold, detail: detailHold, chose: choseHold, keep: keepHold, act: ActHold, onTraffic: true, needs: NeedConns,
	replay: sched.FaultReplay{Remake: true}}

func possibleHold(in *Injector, o *sched.Op) bool {
	if len(in.plan.Match) > 0 {
		return in.plan.MaxHold > 0 && in.possibleMsgHold(o.Node)
	}
	return in.plan.MaxHold > 0 && slices.ContainsFunc(in.conns, func(c Conn) bool {
		return (c.From == o.Node || c.To == o.Node) && !in.holding(c.Conn)
	})
}

func (in *Injector) holding(conn string) bool {
	_, ok := in.held[conn]
	return ok
}

// detailHold draws the connection direction a hold holds and for how long.
func detailHold(in *Injector, o *sched.Op) {
	if len(in.plan.Match) > 0 {
		in.drawMsgHold(o)
		return
	}
	var mine []Conn
	for _, cn := range in.conns {
		if (cn.From == o.Node || cn.To == o.Node) && !in.holding(cn.Conn) {
			mine = append(mine, cn)
		}
	}
	cn := mine[in.r.IntN(len(mine))]
	o.Conn = cn.Conn
	o.Peer = cn.To
	o.Delay = int64(in.upTo(in.plan.MaxHold))
}

func choseHold(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	if o.Made() {
		choseKindHold(in, o, now)
		return nil
	}
	in.spend(now)
	in.held[o.Conn] = now + time.Duration(o.Delay)
	return nil
}

// bipartition builds a cut of the given shape around unit: unit alone, unit
// and the rest of a minority, or unit as the bridge between two halves.
func (in *Injector) bipartition(shape string, unit []string) *netCut {
	var rest [][]string
	for _, u := range in.plan.units() {
		if !slices.Equal(u, unit) {
			rest = append(rest, u)
		}
	}
	in.r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	c := &netCut{shape: shape, a: slices.Clone(unit), rest: true}
	switch shape {
	case ShapeMinority:
		for _, u := range rest[:len(rest)/2-1] { // (n-1)/2 units in all
			c.a = append(c.a, u...)
		}
	case ShapeBridge:
		h := len(rest) / 2
		c.a, c.rest = nil, false
		for _, u := range rest[:h] {
			c.a = append(c.a, u...)
		}
		for _, u := range rest[h:] {
			c.b = append(c.b, u...)
		}
	}
	return c
}

// settle fixes a drawn cut's sides at its injection: the nodes that
// follow a side's join it (Plan.Follow), b becomes the rest when it is,
// and the cut gets its name.
func (in *Injector) settle(c *netCut) {
	c.a = in.follow(c.a)
	if c.rest {
		c.b = in.others(c.a)
	} else {
		c.b = slices.DeleteFunc(in.follow(c.b), func(n string) bool { return slices.Contains(c.a, n) })
	}
	if c.swap {
		c.a, c.b = c.b, c.a
	}
	c.a, c.b = in.ordered(c.a), in.ordered(c.b)
	sep := "|"
	if c.oneway {
		sep = ">"
	}
	c.name = strings.Join(c.a, ",") + sep + strings.Join(c.b, ",")
}

// follow adds to side the nodes that follow it (Plan.Follow): those outside
// the plan connected to the plan's nodes of side and to no other of them.
func (in *Injector) follow(side []string) []string {
	if !in.plan.Follow {
		return side
	}
	out := slices.Clone(side)
	for _, n := range in.all {
		if slices.Contains(in.plan.Nodes, n) || slices.Contains(side, n) {
			continue
		}
		var servers []string
		for _, p := range in.peers[n] {
			if slices.Contains(in.plan.Nodes, p) && !slices.Contains(servers, p) {
				servers = append(servers, p)
			}
		}
		if len(servers) == 1 && slices.Contains(side, servers[0]) {
			out = append(out, n)
		}
	}
	return out
}

// ordered sorts nodes in cluster order.
func (in *Injector) ordered(nodes []string) []string {
	var out []string
	for _, n := range in.all {
		if slices.Contains(nodes, n) {
			out = append(out, n)
		}
	}
	return out
}

// choseCut puts a chosen cut of the network up.
func choseCut(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
	c := in.keptCut
	in.keptCut = nil
	if o == in.offer {
		// The offer's drawn cut goes with it, kept or not.
		c = cmp.Or(c, in.offerCut)
		in.offerCut = nil
	}
	if c == nil {
		// Made up from a record that names no cut (one that cut
		// nothing): it cuts nothing again.
		o.Peer = fmt.Sprintf("cuts nothing: its record names no cut (%q); not spent", o.Peer)
		return nil
	}
	base := *c
	in.settle(c)
	if in.clashes(c) {
		// Who follows whom changed since the draw: the cut keeps its
		// own nodes, so it shares no link with a cut in force.
		follow := in.plan.Follow
		in.plan.Follow, c = false, &base
		in.settle(c)
		in.plan.Follow = follow
	}
	if in.clashes(c) {
		// A probe aimed it at a node whose links another cut holds:
		// it cuts nothing rather than take another's links down with it,
		// and spends neither the budget nor a trigger: the next
		// injection is drawn as if it had not been offered.
		o.Peer = "cuts nothing: " + c.name + " shares a link with a cut in force; not spent"
		return nil
	}
	in.spend(now)
	in.putCut(c)
	o.Peer = "cuts " + c.name
	if o.Kind == Bipartition {
		o.Peer = c.shape + " " + c.name
	}
	e.Cut, e.Rest, e.OneWay = c.a, c.b, c.oneway
	in.until["heal:"+c.name] = now + time.Duration(o.Delay)
	return nil
}

// heldConn reports whether a hold in force holds a delivery on conn at now.
func (in *Injector) heldConn(conn string, now time.Duration) bool {
	end, ok := in.held[conn]
	if !ok {
		return false
	}
	if now < end {
		return true
	}
	delete(in.held, conn)
	return false
}

// cutRoom says whether another cut may be put up (Plan.Overlap).
func (in *Injector) cutRoom() bool { return len(in.cuts) < max(in.plan.Overlap, 1) }

// partitionCut is the cut a partition around node makes now: its side
// (with the nodes that follow it) against all others.
func (in *Injector) partitionCut(node string) *netCut {
	side := in.follow(in.plan.side(node))
	return &netCut{name: strings.Join(side, ","), a: side, b: in.others(side)}
}

// clashes reports whether cut c, settled now, would share a link (a pair
// of nodes, either way) with a cut in force: cuts in force together never
// do (Plan.Overlap).
func (in *Injector) clashes(c *netCut) bool {
	if len(in.cuts) == 0 {
		return false
	}
	p := *c
	if p.name == "" {
		in.settle(&p)
	}
	return in.cutLinks.Shares(p.cut())
}
