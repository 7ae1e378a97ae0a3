package faults

import (
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/sched"
)

// keepDraw puts on o, a fault a replay or a forced run chose, what rec, the
// trace's record of it, drew: its node, size and target. The injector drew
// o's afresh (at its offer, or when a probe aimed it) from a generator
// whose state a forced run's other offers have moved; a forced run whose
// partition lasted another while, whose one-way cut ran the other way or
// whose hold held another node's messages is not the trace's run with a
// decision left out. In a replay that follows the trace the two are the
// same. A fault the strategy made up (it was not offered) has only these.
func (in *Injector) keepDraw(o, rec *sched.Op) {
	if rec == nil || rec.Kind != o.Kind || rec.Made() {
		return
	}
	if slices.Contains(in.all, rec.Node) {
		o.Node = rec.Node
	}
	if k := kindDefs[o.Kind].keep; k != nil {
		k(in, o, rec)
	}
}

// keepDelay keeps a fault's length (an outage, a pause, a clock's jump or
// drift, a stall).
func keepDelay(_ *Injector, o, rec *sched.Op) { o.Delay = rec.Delay }

// keepHold keeps what a hold holds (a connection direction, or a node's
// messages one way) and for how long.
func keepHold(_ *Injector, o, rec *sched.Op) {
	o.Conn, o.Peer, o.Delay = rec.Conn, rec.Peer, rec.Delay
}

// keepLink keeps a slow or flapping link: which, how slow or in what
// phases, for how long, and what show prints of it.
func keepLink(_ *Injector, o, rec *sched.Op) {
	o.Object, o.Delay, o.Pick, o.Peer = rec.Object, rec.Delay, rec.Pick, rec.Peer
}

// keepGray keeps which way a gray node's messages are held, and how long.
func keepGray(_ *Injector, o, rec *sched.Op) { o.Conn, o.Delay = rec.Conn, rec.Delay }

// keepStorage keeps a storage fault's draws (sched.Op.KeepDraw) and its
// length or call.
func keepStorage(_ *Injector, o, rec *sched.Op) {
	o.KeepDraw(rec)
	o.Delay, o.Syscall = rec.Delay, rec.Syscall
}

// keepCut keeps a cut of the network as the trace named it (its Peer,
// "cuts a>b" or "minority a|b"): the sides settled at its injection, so the
// cut goes up the same way and its heal names it the same. A record that
// names no cut of known nodes leaves the one drawn.
func keepCut(in *Injector, o, rec *sched.Op) {
	o.Delay = rec.Delay
	if c, ok := in.parseCut(rec.Peer); ok {
		in.keptCut = c
	}
}

// parseCut reads a cut from what choseCut wrote of it: "cuts " and its
// name, or a bipartition's shape and its name, the sides the name's
// nodes in cluster order. It is settled already: rest and swap are off,
// so settle leaves its sides (adding the nodes that follow them).
func (in *Injector) parseCut(peer string) (*netCut, bool) {
	shape, name, ok := strings.Cut(peer, " ")
	if !ok {
		return nil, false
	}
	sep := "|"
	if strings.Contains(name, ">") {
		sep = ">"
	}
	left, right, ok := strings.Cut(name, sep)
	if !ok {
		return nil, false
	}
	a, b := strings.Split(left, ","), strings.Split(right, ",")
	unknown := func(n string) bool { return !slices.Contains(in.all, n) }
	if slices.ContainsFunc(a, unknown) || slices.ContainsFunc(b, unknown) ||
		slices.ContainsFunc(a, func(n string) bool { return slices.Contains(b, n) }) {
		return nil, false
	}
	c := &netCut{a: a, b: b, oneway: sep == ">", shape: sep}
	if shape != "cuts" {
		c.shape = shape
	}
	return c, true
}
