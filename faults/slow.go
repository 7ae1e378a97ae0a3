package faults

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A slow link delays every message between two nodes (their groups), both
// ways, for a while: each delivery across it is released only once it has
// waited the slow's delay since it was first ready. It delays deliveries
// only: a connect across it opens at once, and a FIN goes as soon as the
// bytes before it are delivered, as it does on any link. Op.Delay is that
// delay (up to Plan.MaxHold), Op.Pick the while in nanoseconds (up to
// Plan.MaxOutage), Op.Object names the link. The tracer has nothing to do:
// the injector holds the deliveries back (Holds). With Plan.SlowMatch it
// delays only the messages of one kind; the others cross it at once.
// A slow's record (its link, delay and while) is all a replay needs to
// make it up.
var slowKind = kindDef{possible: possibleSlow, detail: detailSlow, chose: choseSlow, keep: keepLink, act: ActHold, holds: holdsSlow, deadline: slowDeadline, onTraffic: true,
	replay: sched.FaultReplay{Remake: true}}

// Slow delays every delivery between two nodes (their groups) by its
// Delay for a while (its Pick, in ns): a slow link.
const Slow sched.Kind = "slow"

func init() { define(Slow, slowKind) }

// slowLink is a slow link in force.
type slowLink struct {
	heldLink // end: when the link is fast again
	delay    time.Duration
	// seen is when each delivery across the link (by op ID) was first
	// ready.
	seen map[uint64]time.Duration
}

func (in *Injector) slowLinks() heldLinks[*slowLink] { return linksOf[*slowLink](in, Slow) }

func possibleSlow(in *Injector, o *sched.Op) bool {
	return in.plan.MaxHold > 0 && in.plan.MaxOutage > 0 && in.slowLinks().possible(in.plan, o.Node)
}

func detailSlow(in *Injector, o *sched.Op) {
	link := in.slowLinks().draw(in, o.Node)
	o.Object = link.object()
	o.Delay = int64(in.upTo(in.plan.MaxHold))
	o.Pick = uint64(in.outage())
	// What show prints (sched.Describe).
	what := ""
	if len(in.plan.SlowMatch) > 0 {
		what = " (one kind of message)"
	}
	o.Peer = fmt.Sprintf("slows %v%s by %v for %v", link, what, time.Duration(o.Delay), time.Duration(o.Pick))
}

func choseSlow(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	if o.Made() {
		choseKindSlow(in, o, now)
		return nil
	}
	in.spend(now)
	putLink(in, Slow, o.Object, &slowLink{
		heldLink: heldLink{linkEnds: parseLink(o.Object), end: now + time.Duration(o.Pick)},
		delay:    time.Duration(o.Delay), seen: map[uint64]time.Duration{},
	})
	return nil
}

// holdsSlow holds a delivery across a slow link until it has waited the
// link's delay. Links whose while is over are dropped, and what they held
// goes.
func holdsSlow(in *Injector, o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	links := in.slowLinks()
	if len(links) == 0 {
		return false
	}
	from, to, ok := deliveryEnds(o, nodeOf)
	if !ok || len(in.plan.SlowMatch) > 0 && !matchesAny(in.plan.SlowMatch, o.Msg, o.Bytes) {
		return false
	}
	return links.holds(from, to, now, func(l *slowLink) bool {
		first, ok := l.seen[o.ID]
		if !ok {
			first = now
			l.seen[o.ID] = now
		}
		return now < first+l.delay
	})
}

// slowDeadline is the earliest release of a delivery a slow link holds
// (its delay, or the link's end if that comes first). The end of a link
// that holds nothing is no deadline: nothing waits for it.
func slowDeadline(in *Injector, now time.Duration) (time.Duration, bool) {
	var d time.Duration
	ok := false
	next := func(t time.Duration) {
		if t > now && (!ok || t < d) {
			d, ok = t, true
		}
	}
	for _, l := range in.slowLinks() {
		for _, first := range l.seen {
			next(min(first+l.delay, l.end))
		}
	}
	return d, ok
}
