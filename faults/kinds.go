package faults

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// kindDef is what the injector does with one fault kind: a new kind is its
// entry in kindDefs (and its functions, in a file of their own), not a case
// in a switch.
type kindDef struct {
	// possible says whether an injection of the kind on o.Node still makes
	// sense. Nil: never drawn (a recovery).
	possible func(in *Injector, o *sched.Op) bool
	// detail draws the injection's size and target at offer time.
	detail func(in *Injector, o *sched.Op)
	// chose applies the chosen op at now and fills what the engine must do.
	chose func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error
	// onTraffic says the kind acts on messages in flight: a spread plan
	// does not take it alone in a lull, where there are none (InLull).
	onTraffic bool
	// storage says the kind acts on a node's disk: the engine keeps the
	// books of the nodes' data files (Plan.Storage).
	storage bool
	// holds, when set, says whether the kind's faults in force (kept in
	// Injector.own) hold op back at now (Injector.Holds); nodeOf names a
	// cluster address's node.
	holds func(in *Injector, o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool
	// deadline, when set, is the next time at which what the kind holds
	// changes, for the clock to jump to when nothing else runs.
	deadline func(in *Injector, now time.Duration) (time.Duration, bool)
}

// kindDefs are the fault kinds the injector knows, by op kind.
var kindDefs = map[sched.Kind]kindDef{
	sched.Crash: {possible: possibleUp, detail: detailOutage, chose: choseCrash},
	sched.Pause: {possible: possibleUp, detail: detailPause, chose: chosePause},
	sched.Partition: {
		possible: func(in *Injector, o *sched.Op) bool {
			return in.cutRoom() && !in.clashes(in.partitionCut(o.Node))
		},
		detail: detailOutage, chose: chosePartition, onTraffic: true,
	},
	sched.ClockJump: {
		possible: func(in *Injector, o *sched.Op) bool { return !in.crashed[o.Node] && in.plan.MaxClockJump > 0 },
		detail:   detailClockJump,
		chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
			in.spend(now)
			e.Shift = time.Duration(o.Delay)
			in.skew[o.Node] += e.Shift
			return nil
		},
	},
	sched.ClockDrift: {
		possible: func(in *Injector, o *sched.Op) bool { return !in.crashed[o.Node] && in.plan.MaxDrift > 0 },
		detail:   detailDrift,
		chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
			in.spend(now)
			e.Drift = o.Delay
			in.drifts[o.Node] = true
			return nil
		},
	},
	sched.Reset: {possible: possibleReset, detail: detailReset, chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
		in.spend(now)
		e.Sock = o.Object
		return nil
	}},
	sched.Drop: {possible: possibleDrop, detail: detailDrop, chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
		in.spend(now)
		e.Datagram = uint64(o.Delay)
		return nil
	}},
	sched.OneWay:      oneWayKind,
	sched.Link:        linkKind,
	sched.Bipartition: bipartitionKind,
	sched.Hold:        holdKind,
	sched.Slow:        slowKind,
	sched.Power:       powerKind,
	sched.Corrupt:     corruptKind,
	sched.IOError:     ioErrorKind,
	sched.Stall:       stallKind,
	sched.Restart:     {chose: choseRestart},
	sched.Heal:        {chose: choseHeal},
}

// possibleUp: the node is neither down nor paused.
func possibleUp(in *Injector, o *sched.Op) bool {
	_, p := in.paused[o.Node]
	return !in.crashed[o.Node] && !p
}

func possibleReset(in *Injector, o *sched.Op) bool {
	if in.crashed[o.Node] {
		return false
	}
	if o.Object == "" { // any of the node's
		return slices.ContainsFunc(in.socks, func(s Sock) bool { return s.Node == o.Node })
	}
	return slices.ContainsFunc(in.socks, func(s Sock) bool { return s.Object == o.Object })
}

func possibleDrop(in *Injector, o *sched.Op) bool {
	if o.Object == "" { // any datagram from or to the node
		return slices.ContainsFunc(in.dgrams, func(d Datagram) bool { return d.From == o.Node || d.To == o.Node })
	}
	return slices.ContainsFunc(in.dgrams, func(d Datagram) bool { return dropObject(d.ID) == o.Object })
}

// detailOutage draws how long a crash or partition lasts.
func detailOutage(in *Injector, o *sched.Op) {
	if in.plan.MaxOutage > 0 {
		o.Delay = int64(in.upTo(in.plan.MaxOutage))
	}
}

func detailPause(in *Injector, o *sched.Op) { o.Delay = int64(in.upTo(in.plan.MaxPause)) }

func detailClockJump(in *Injector, o *sched.Op) {
	d := in.upTo(in.plan.MaxClockJump)
	switch in.plan.ClockDirection {
	case Both:
		if in.r.IntN(2) == 0 {
			d = -d
		}
	case Backward:
		d = -d
	}
	o.Delay = int64(d)
}

func detailDrift(in *Injector, o *sched.Op) {
	m := in.plan.MaxDrift
	ppm := m/10 + in.r.Int64N(m-m/10+1)
	switch in.plan.ClockDirection {
	case Both:
		if in.r.IntN(2) == 0 {
			ppm = -ppm
		}
	case Backward: // a clock that runs slow
		ppm = -ppm
	}
	o.Delay = ppm
}

func detailDrop(in *Injector, o *sched.Op) {
	var mine []Datagram
	for _, d := range in.dgrams {
		if d.From == o.Node || d.To == o.Node {
			mine = append(mine, d)
		}
	}
	d := mine[in.r.IntN(len(mine))]
	o.Object, o.Conn, o.At = dropObject(d.ID), d.Conn, 0
	if _, peer, ok := strings.Cut(d.Conn, ">"); ok {
		o.Peer = peer
	}
	o.Delay = int64(d.ID)
}

func detailReset(in *Injector, o *sched.Op) {
	var mine []Sock
	for _, s := range in.socks {
		if s.Node == o.Node {
			mine = append(mine, s)
		}
	}
	s := mine[in.r.IntN(len(mine))]
	o.Object, o.Conn = s.Object, s.Conn
	if _, peer, ok := strings.Cut(s.Conn, ">"); ok {
		o.Peer = peer
	}
}

func choseCrash(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	in.spend(now)
	in.crashed[o.Node] = true
	in.until["restart:"+o.Node] = now + time.Duration(o.Delay)
	return nil
}

func chosePause(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	// The pause's end is not written into the op: the offered op of a
	// replay has none, and would not match.
	in.spend(now)
	in.paused[o.Node] = now + time.Duration(o.Delay)
	return nil
}

func chosePartition(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
	in.spend(now)
	c := in.partitionCut(o.Node)
	in.cuts = append(in.cuts, c)
	e.Cut, e.Rest = c.a, c.b
	in.until["heal:"+c.name] = now + time.Duration(o.Delay)
	return nil
}

func choseRestart(in *Injector, o *sched.Op, _ time.Duration, _ *Effect) error {
	delete(in.crashed, o.Node)
	delete(in.recov, "restart:"+o.Node)
	delete(in.until, "restart:"+o.Node)
	return nil
}

func choseHeal(in *Injector, o *sched.Op, _ time.Duration, e *Effect) error {
	i := slices.IndexFunc(in.cuts, func(c *netCut) bool { return c.name == o.Node })
	if i < 0 {
		return fmt.Errorf("faults: heal of %s, which is not in force", o.Node)
	}
	c := in.cuts[i]
	e.Cut, e.Rest, e.OneWay = c.a, c.b, c.oneway
	in.cuts = slices.Delete(in.cuts, i, i+1)
	delete(in.recov, "heal:"+o.Node)
	delete(in.until, "heal:"+o.Node)
	return nil
}
