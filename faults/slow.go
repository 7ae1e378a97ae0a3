package faults

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A slow link delays every message between two nodes (their groups), both
// ways, for a while: each delivery across it is released only once it has
// waited the slow's delay since it was first ready. Op.Delay is that delay
// (up to Plan.MaxHold), Op.Pick the while in nanoseconds (up to
// Plan.MaxOutage), Op.Object names the link. The tracer has nothing to do:
// the injector holds the deliveries back (Holds).
var slowKind = kindDef{possible: possibleSlow, detail: detailSlow, chose: choseSlow, holds: holdsSlow, deadline: slowDeadline, onTraffic: true}

// Slow delays every delivery between two nodes (their groups) by its
// Delay for a while (its Pick, in ns): a slow link.
const Slow sched.Kind = "slow"

func init() { define(Slow, slowKind) }

// slowLink is a slow link in force.
type slowLink struct {
	a, b  []string
	end   time.Duration // when the link is fast again
	delay time.Duration
	// seen is when each delivery across the link (by op ID) was first
	// ready.
	seen map[uint64]time.Duration
}

// slowLinks are the slow links in force, by Op.Object.
type slowLinks map[string]*slowLink

func (in *Injector) slowLinks() slowLinks {
	s, _ := in.own[Slow].(slowLinks)
	return s
}

// slowPeers are the units node's unit may be slowed towards: the others
// whose link with it is not slow already.
func (in *Injector) slowPeers(node string) (unit []string, peers [][]string) {
	unit = in.plan.side(node)
	links := in.slowLinks()
	for _, u := range in.plan.units() {
		if !slices.Equal(u, unit) && links[slowObject(unit, u)] == nil {
			peers = append(peers, u)
		}
	}
	return unit, peers
}

// slowObject names the link between units a and b (in that order).
func slowObject(a, b []string) string {
	return "link:" + strings.Join(a, ",") + "|" + strings.Join(b, ",")
}

func possibleSlow(in *Injector, o *sched.Op) bool {
	if in.plan.MaxHold <= 0 || in.plan.MaxOutage <= 0 {
		return false
	}
	// Asked at every step while a slow is offered: stop at the first
	// peer rather than list them all.
	unit := in.plan.side(o.Node)
	links := in.slowLinks()
	return slices.ContainsFunc(in.plan.units(), func(u []string) bool {
		return !slices.Equal(u, unit) && (len(links) == 0 || links[slowObject(unit, u)] == nil)
	})
}

func detailSlow(in *Injector, o *sched.Op) {
	unit, peers := in.slowPeers(o.Node)
	peer := peers[in.r.IntN(len(peers))]
	o.Object = slowObject(unit, peer)
	o.Delay = int64(in.upTo(in.plan.MaxHold))
	o.Pick = uint64(in.upTo(in.plan.MaxOutage))
	// What show prints (sched.Describe).
	o.Peer = fmt.Sprintf("slows %s|%s by %v for %v", strings.Join(unit, ","), strings.Join(peer, ","), time.Duration(o.Delay), time.Duration(o.Pick))
}

func choseSlow(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	in.spend(now)
	a, b, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), "|")
	links := in.slowLinks()
	if links == nil {
		links = slowLinks{}
		in.own[Slow] = links
	}
	links[o.Object] = &slowLink{
		a: strings.Split(a, ","), b: strings.Split(b, ","),
		end: now + time.Duration(o.Pick), delay: time.Duration(o.Delay), seen: map[uint64]time.Duration{},
	}
	return nil
}

// holdsSlow holds a delivery across a slow link until it has waited the
// link's delay. Links whose while is over are dropped, and what they held
// goes.
func holdsSlow(in *Injector, o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	links := in.slowLinks()
	if o.Kind != sched.Deliver || len(links) == 0 {
		return false
	}
	src, dst, ok := strings.Cut(o.Conn, ">")
	if !ok {
		return false
	}
	from, to := addrNode(src, nodeOf), addrNode(dst, nodeOf)
	held := false
	for name, l := range links {
		if now >= l.end {
			delete(links, name)
			continue
		}
		across := slices.Contains(l.a, from) && slices.Contains(l.b, to) || slices.Contains(l.b, from) && slices.Contains(l.a, to)
		if !across {
			continue
		}
		first, ok := l.seen[o.ID]
		if !ok {
			first = now
			l.seen[o.ID] = now
		}
		if now < first+l.delay {
			held = true
		}
	}
	return held
}

// slowDeadline is the earliest release of a delivery a slow link holds, or
// the earliest end of a slow link.
func slowDeadline(in *Injector, now time.Duration) (time.Duration, bool) {
	var d time.Duration
	ok := false
	next := func(t time.Duration) {
		if t > now && (!ok || t < d) {
			d, ok = t, true
		}
	}
	for _, l := range in.slowLinks() {
		next(l.end)
		for _, first := range l.seen {
			next(min(first+l.delay, l.end))
		}
	}
	return d, ok
}
