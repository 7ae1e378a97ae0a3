package faults

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A kind-aimed slow (sched.Aim, like a kind-aimed hold: match.go) slows
// the messages of one learned kind on one link, from one node to another
// (or on every link into a node or out of it): for its while, each such
// delivery waits its delay from when it was first ready, while every
// other message flows. An exploring branch aims it where its spec allows
// slow links; the injector never draws it. Its op records what it aims at
// (KindSlow), so a replay makes it up from its record (sched.Op.Made).

// KindSlow is the op of a kind-aimed slow: the messages from one node to
// another whose shape is shape (label names the kind for people) each
// delayed by delay, for while. One end may be sched.AnyNode.
func KindSlow(from, to, shape, label string, delay, while time.Duration) *sched.Op {
	o := KindHold(from, to, shape, label, delay)
	o.Kind, o.Conn, o.Pick = Slow, kindSlowKey(from, to, shape), uint64(while)
	return o
}

// kindSlowKey names a kind-aimed slow in Injector.kindSlows: one link and
// one kind are slowed once at a time.
func kindSlowKey(from, to, shape string) string {
	return "slow messages " + from + ">" + to + " of " + strconv.Quote(shape)
}

// kindSlow is a kind-aimed slow in force.
type kindSlow struct {
	kindHold
	delay, end time.Duration
	// seen is when each delivery it slows (by op ID) was first ready.
	seen map[uint64]time.Duration
}

// choseKindSlow puts a kind-aimed slow in force, unless it would do
// nothing, as choseKindHold decides; such a slow is recorded as slowing
// nothing and spends neither the budget nor a trigger.
func choseKindSlow(in *Injector, o *sched.Op, now time.Duration) {
	s := in.kindSlows[o.Conn]
	if why := in.aimedIdle(now, s != nil && now < s.end, "its link and kind are slowed"); why != "" {
		o.Peer = "slows nothing: " + why + "; not spent"
		return
	}
	in.spend(now)
	from, to, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), ">")
	in.kindSlows[o.Conn] = &kindSlow{
		kindHold: kindHold{from: from, to: to, shape: string(o.Shape)},
		delay:    time.Duration(o.Delay), end: now + time.Duration(o.Pick),
		seen: map[uint64]time.Duration{},
	}
}

// slowedKind reports whether a kind-aimed slow in force at now holds the
// delivery o: it goes over the slow's link, its bytes have the slow's
// shape, and it has not yet waited the delay. Slows whose while is over
// are dropped, and what they held goes.
func (in *Injector) slowedKind(o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	from, to, ok := deliveryEnds(o, nodeOf)
	if !ok {
		return false
	}
	held := false
	for key, s := range in.kindSlows {
		if now >= s.end {
			delete(in.kindSlows, key)
			continue
		}
		if !s.covers(from, to) || o.Msg == "" || !in.plan.Shape(o.Msg, o.Bytes, s.shape) {
			continue
		}
		first, ok := s.seen[o.ID]
		if !ok {
			first = now
			s.seen[o.ID] = now
		}
		held = held || now < first+s.delay
	}
	return held
}

// kindSlowDeadline offers e the earliest release of a delivery a
// kind-aimed slow holds (its delay, or the slow's end if that comes
// first).
func (in *Injector) kindSlowDeadline(e *soonest) {
	for _, s := range in.kindSlows {
		for _, first := range s.seen {
			e.offer(min(first+s.delay, s.end))
		}
	}
}
