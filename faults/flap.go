package faults

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// Flap makes the link between two nodes (their groups) go down and up,
// again and again, for a while: each delivery, and each blocking connect,
// across it that is ready while it is down waits for it to come up, while
// every other link flows. A non-blocking connect and a FIN are not held
// (the tracer would have to hold them; docs/spec.md says what crosses).
// A flapping link is what makes a cluster's leader come and go (leader
// churn, pre-vote bugs) where a cut makes it leave once.
//
// Op.Delay is the while (up to Plan.MaxOutage), Op.Pick seeds the
// lengths of its phases (flapPhases), Op.Object names the link. The
// tracer has nothing to do: the injector holds the deliveries and
// connects back (Holds).
const Flap sched.Kind = "flap"

func init() {
	define(Flap, kindDef{
		possible: possibleFlap, detail: detailFlap, chose: choseFlap, keep: keepLink, act: ActHold, holds: holdsFlap, deadline: flapDeadline, onTraffic: true,
		// A replay may make a flap up (it needs only the plan's nodes),
		// and a forced one flaps with the trace's phases (its Pick), not
		// those of the flap the engine drew afresh.
		replay: sched.FaultReplay{Remake: true, KeepDraw: true},
	})
}

// flapPhase is a stretch of time, [from, to).
type flapPhase struct{ from, to time.Duration }

// flapLink is a flapping link in force.
type flapLink struct {
	heldLink // end: when it stops flapping, up
	// down are its down phases in order, in virtual time.
	down []flapPhase
}

func (in *Injector) flapLinks() heldLinks[*flapLink] { return linksOf[*flapLink](in, Flap) }

// flapPhases are a flap's phases, as offsets from its start: down first,
// then up, in turn, each a tenth of maxHold to all of it in whole ms,
// drawn from pick, the last cut short at while. The same op gives the
// same phases wherever it is chosen (a run, its replay).
func flapPhases(while, maxHold time.Duration, pick uint64) (down, up []flapPhase) {
	r := rand.New(rand.NewPCG(pick, 0x666c6170)) // "flap"
	draw := func() time.Duration { return max(upTo(r, maxHold), time.Millisecond) }
	for t, isDown := time.Duration(0), true; t < while; isDown = !isDown {
		p := flapPhase{from: t, to: min(t+draw(), while)}
		if isDown {
			down = append(down, p)
		} else {
			up = append(up, p)
		}
		t = p.to
	}
	return down, up
}

// flapShow is what show prints of a flap: "flaps s1|s3 for 900ms: down
// 120ms, up 300ms, down 250ms", the phases in order (the first few of a
// long flap, and how many there are).
func flapShow(link linkEnds, while time.Duration, down, up []flapPhase) string {
	const shown = 8
	var phases []string
	for i := 0; i < len(down) && len(phases) < shown; i++ {
		phases = append(phases, fmt.Sprintf("down %v", down[i].to-down[i].from))
		if i < len(up) && len(phases) < shown {
			phases = append(phases, fmt.Sprintf("up %v", up[i].to-up[i].from))
		}
	}
	s := fmt.Sprintf("flaps %v for %v: %s", link, while, strings.Join(phases, ", "))
	if n := len(down) + len(up); n > shown {
		s += fmt.Sprintf(", … (%d phases)", n)
	}
	return s
}

func possibleFlap(in *Injector, o *sched.Op) bool {
	return in.plan.MaxHold > 0 && in.plan.MaxOutage > 0 && in.flapLinks().possible(in.plan, o.Node)
}

func detailFlap(in *Injector, o *sched.Op) {
	link := in.flapLinks().draw(in, o.Node)
	o.Object = link.object()
	o.Delay = int64(in.outage())
	o.Pick = in.r.Uint64()
	down, up := flapPhases(time.Duration(o.Delay), in.plan.MaxHold, o.Pick)
	// What show prints (sched.Describe).
	o.Peer = flapShow(link, time.Duration(o.Delay), down, up)
}

func choseFlap(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	in.spend(now)
	link := parseLink(o.Object)
	down, up := flapPhases(time.Duration(o.Delay), in.plan.MaxHold, o.Pick)
	// The phases flapped, for show: a forced replay may have put the
	// trace's Pick in place of the one drawn with o.Peer.
	o.Peer = flapShow(link, time.Duration(o.Delay), down, up)
	for i := range down {
		down[i].from += now
		down[i].to += now
	}
	putLink(in, Flap, o.Object, &flapLink{heldLink: heldLink{linkEnds: link, end: now + time.Duration(o.Delay)}, down: down})
	return nil
}

// holdsFlap holds a delivery, or a blocking connect, across a flapping
// link while the link is down: no connection opens across it then, as
// none opens across a cut (Injector.Holds). Links whose while is over are
// dropped.
func holdsFlap(in *Injector, o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	links := in.flapLinks()
	if len(links) == 0 {
		return false
	}
	from, to, ok := deliveryEnds(o, nodeOf)
	if !ok {
		from, to, ok = connectEnds(o, nodeOf)
	}
	if !ok {
		return false
	}
	return links.holds(from, to, now, func(l *flapLink) bool {
		_, down := l.downAt(now)
		return down
	})
}

// downAt is the down phase the link is in at now, if it is down.
func (l *flapLink) downAt(now time.Duration) (flapPhase, bool) {
	// The first down phase that ends after now.
	i, _ := slices.BinarySearchFunc(l.down, now, func(p flapPhase, t time.Duration) int {
		if p.to <= t {
			return -1
		}
		return 1
	})
	if i < len(l.down) && l.down[i].from <= now {
		return l.down[i], true
	}
	return flapPhase{}, false
}

// flapDeadline is the earliest end of a down phase in progress, when what
// a flapping link holds may go. Nothing else is one: while a link is up
// nothing it holds changes until its next down phase starts, and what is
// ready then waits. The flap's end needs no deadline of its own: a down
// phase in progress then ends with it, and an up one holds nothing.
func flapDeadline(in *Injector, now time.Duration) (time.Duration, bool) {
	var d time.Duration
	ok := false
	for _, l := range in.flapLinks() {
		if p, down := l.downAt(now); down && (!ok || p.to < d) {
			d, ok = p.to, true
		}
	}
	return d, ok
}
