package faults

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A link kind (slow, flap) acts on the ops that cross the link between a
// node's unit and another drawn at offer time, and keeps its links in
// force in Injector.own. What every such kind does the same way is here:
// how the link is drawn and named, and which ops cross it (deliveryEnds,
// connectEnds). Which of those the kind holds, and how long, stays in the
// kind's file.

// linkEnds are the units a link joins, a the drawing node's.
type linkEnds struct{ a, b []string }

// parseLink is the link an Op.Object names (linkEnds.object).
func parseLink(object string) linkEnds {
	a, b, _ := strings.Cut(strings.TrimPrefix(object, "link:"), "|")
	return linkEnds{strings.Split(a, ","), strings.Split(b, ",")}
}

// object names the link in Op.Object: "link:s1,s2|s3".
func (l linkEnds) object() string { return "link:" + l.String() }

// String is the link as show prints it: "s1,s2|s3".
func (l linkEnds) String() string { return strings.Join(l.a, ",") + "|" + strings.Join(l.b, ",") }

// across reports whether a message from node from to node to goes across
// the link, either way.
func (l linkEnds) across(from, to string) bool {
	return slices.Contains(l.a, from) && slices.Contains(l.b, to) || slices.Contains(l.b, from) && slices.Contains(l.a, to)
}

// heldLink is what every link kind keeps of a link in force; the kind's own
// link type embeds it.
type heldLink struct {
	linkEnds
	end time.Duration // when the link's while is over
}

func (l *heldLink) held() *heldLink { return l }

// inForce is a link kind's own link type (*slowLink), which embeds heldLink.
type inForce interface{ held() *heldLink }

// heldLinks are a link kind's links in force, by Op.Object.
type heldLinks[L inForce] map[string]L

// linksOf are kind k's links in force; nil when there are none.
func linksOf[L inForce](in *Injector, k sched.Kind) heldLinks[L] {
	links, _ := in.own[k].(heldLinks[L])
	return links
}

// putLink puts l in force as kind k's link named object.
func putLink[L inForce](in *Injector, k sched.Kind, object string, l L) {
	links := linksOf[L](in, k)
	if links == nil {
		links = heldLinks[L]{}
		in.own[k] = links
	}
	links[object] = l
}

// taken reports whether the link between units a and b is in force,
// drawn either way: s1|s2 and s2|s1 are one link.
func (ls heldLinks[L]) taken(a, b []string) bool {
	_, ab := ls[linkEnds{a, b}.object()]
	_, ba := ls[linkEnds{b, a}.object()]
	return ab || ba
}

// possible reports whether node's unit has a peer to draw a link towards
// (draw).
func (ls heldLinks[L]) possible(p Plan, node string) bool {
	// Asked at every step while the kind is offered: stop at the first
	// peer rather than list them all.
	unit := p.side(node)
	return slices.ContainsFunc(p.units(), func(u []string) bool {
		return !slices.Equal(u, unit) && (len(ls) == 0 || !ls.taken(unit, u))
	})
}

// draw draws the link from node's unit towards one of the others whose
// link with it is not in force already; possible says there is one.
func (ls heldLinks[L]) draw(in *Injector, node string) linkEnds {
	unit := in.plan.side(node)
	var peers [][]string
	for _, u := range in.plan.units() {
		if !slices.Equal(u, unit) && !ls.taken(unit, u) {
			peers = append(peers, u)
		}
	}
	return linkEnds{unit, peers[in.r.IntN(len(peers))]}
}

// deliveryEnds are the nodes a delivery goes from and to; ok is false
// for every other op.
func deliveryEnds(o *sched.Op, nodeOf func(netip.Addr) string) (from, to string, ok bool) {
	if o.Kind != sched.Deliver {
		return "", "", false
	}
	src, dst, ok := strings.Cut(o.Conn, ">")
	if !ok {
		return "", "", false
	}
	return addrNode(src, nodeOf), addrNode(dst, nodeOf), true
}

// connectEnds are the node of a blocking connect and the node it dials,
// as a cut decides it (Injector.Holds); ok is false for every other op. A
// non-blocking connect is left out: held, its call would block.
func connectEnds(o *sched.Op, nodeOf func(netip.Addr) string) (from, to string, ok bool) {
	if o.Kind != sched.Connect || o.NonBlocking {
		return "", "", false
	}
	return o.Node, addrNode(o.Peer, nodeOf), true
}

// holds reports whether hold holds an op from node from to node to at now
// on any link in force between them. hold is asked of every such link, as
// a kind may keep books of the ops it saw. Links whose while is over are
// dropped.
func (ls heldLinks[L]) holds(from, to string, now time.Duration, hold func(L) bool) bool {
	held := false
	for name, l := range ls {
		h := l.held()
		if now >= h.end {
			delete(ls, name)
			continue
		}
		if h.across(from, to) && hold(l) {
			held = true
		}
	}
	return held
}
