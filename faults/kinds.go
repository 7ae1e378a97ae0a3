package faults

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// kindDef is what the injector does with one fault kind: a new kind is
// its constant and its entry, defined in a file of its own (define, from
// that file's init), not a case in a switch.
type kindDef struct {
	// start, when set, sets up the kind's own state (Injector.own) as a
	// trial's injector is made: for a kind that keeps books from the
	// trial's first step, before any fault of it is drawn.
	start func(in *Injector)
	// possible says whether an injection of the kind on o.Node still makes
	// sense. Nil: never drawn (a recovery).
	possible func(in *Injector, o *sched.Op) bool
	// detail draws the injection's size and target at offer time.
	detail func(in *Injector, o *sched.Op)
	// chose applies the chosen op at now and fills what the engine must do.
	chose func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error
	// keep puts on o what detail drew for rec, the trace's record of it
	// (keepDraw). Nil: the kind draws nothing a replay must keep (a
	// reset's socket and a drop's datagram are this run's).
	keep func(in *Injector, o, rec *sched.Op)
	// act is the mechanism by which the engine carries the kind out
	// (Effect.Act); ActHold when the injector does it alone by holding
	// ops back. It must be set: define refuses the zero Act.
	act Act
	// needs are the targets the engine must gather at each step for the
	// kind (Plan.Needs).
	needs Need
	// replay is how a replay treats the kind's ops (ReplayOf).
	replay sched.FaultReplay
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
	// lasts, when set, is the span the plan draws the kind's length
	// (Op.Delay: how long the fault is in force) from, for a kind whose
	// record keeps it (keep) and whose end comes from it alone (Plan.Lasts).
	lasts func(p Plan) (least, most time.Duration)
}

// Act is how the engine carries out a chosen fault: the tracer or
// firewall mechanism it uses. Kinds share mechanisms (every cut of the
// network is ActCut), so a new kind that reuses one needs no line in the
// engine.
type Act uint8

const (
	// actUnset is the zero Act, an entry that forgot its mechanism: define
	// refuses it, as such a kind would spend its budget and do nothing.
	actUnset Act = iota
	// ActHold: the injector carries the fault out alone, holding ops back
	// (a pause, a hold, a slow or flapping link); the engine does nothing.
	ActHold
	ActCrash
	ActRestart
	ActClock // move Node's wall clock by Effect.Shift
	ActDrift // make Node's wall clock run at Effect.Drift
	ActReset // abort the connection Effect.Sock
	ActDrop  // discard the datagram Effect.Datagram
	// ActCut puts up a cut of the network in the tracer and the firewall
	// (partition, one-way, link, bipartition; Effect.Cut, Rest, OneWay).
	ActCut
	ActHeal // ends a cut
	ActPower
	ActCorrupt
	ActIOError
	ActStall
)

// Need is a set of targets the engine gathers at each step for the kinds
// of a plan (Targets).
type Need uint8

const (
	NeedSocks     Need = 1 << iota // connected TCP sockets (Targets.Socks)
	NeedDatagrams                  // UDP datagrams in flight
	NeedConns                      // connection directions with deliveries pending
	NeedDataFiles                  // data files of the nodes down
)

// Needs reports whether any kind of the plan needs the targets n.
func (p Plan) Needs(n Need) bool {
	return slices.ContainsFunc(p.Kinds, func(k sched.Kind) bool { return kindDefs[k].needs&n != 0 })
}

// Lasts is the span from which the plan draws how long a fault of kind k
// is in force (its Op.Delay), when that length alone ends it and a forced
// run keeps it from the fault's record: a crash's time down, a pause, a
// cut of the network, a power cut. An exploring campaign may make such a
// fault last longer within it (sched.Longer). Not ok for other kinds, and
// for a kind the plan gives no length (a crash without max_outage stays
// down).
func (p Plan) Lasts(k sched.Kind) (least, most time.Duration, ok bool) {
	d, known := kindDefs[k]
	if !known || d.lasts == nil || !slices.Contains(p.Kinds, k) {
		return 0, 0, false
	}
	least, most = d.lasts(p)
	return least, most, most > 0
}

// kindDefs are the fault kinds the injector knows, by op kind. Each kind's
// file adds its entry from its init function (define); nothing writes the
// table after package initialisation (TestDefineOnlyInInit), so it is
// read-only once any other package's code runs, as image.RegisterFormat's
// formats are.
var kindDefs = map[sched.Kind]kindDef{}

// define adds fault kind k. It panics on a name that is no fault kind (an
// op kind's, an empty or malformed one), on a kind defined twice and on
// an entry without chose or act: all are mistakes in this package, found
// when it loads.
func define(k sched.Kind, d kindDef) {
	if _, err := sched.ParseKind(string(k)); err != nil || !k.IsFault() {
		panic(fmt.Sprintf("faults: %q cannot name a fault kind", string(k)))
	}
	if _, dup := kindDefs[k]; dup {
		panic(fmt.Sprintf("faults: fault kind %q defined twice", string(k)))
	}
	if d.chose == nil {
		panic(fmt.Sprintf("faults: fault kind %q cannot be chosen", string(k)))
	}
	if d.act == actUnset {
		panic(fmt.Sprintf("faults: fault kind %q has no act (ActHold when the injector carries it out alone)", string(k)))
	}
	kindDefs[k] = d
}

// Known reports whether k is a fault kind this package defines.
func Known(k sched.Kind) bool {
	_, ok := kindDefs[k]
	return ok
}

// ReplayOf is how a replay treats fault kind k's ops (the engine and
// explain hand it to sched.NewReplay and sched.NewForced).
func ReplayOf(k sched.Kind) sched.FaultReplay { return kindDefs[k].replay }

// Kinds are the fault kinds this package defines, sorted by name: the
// injections a plan may name, and the recoveries (restart, heal) that
// follow them (sched.FaultReplay.Recovery).
func Kinds() []sched.Kind {
	return slices.Sorted(maps.Keys(kindDefs))
}

// The fault kinds whose behaviour is in this file.
const (
	// Crash kills a node's processes; Restart follows after its outage
	// (Op.Delay).
	Crash sched.Kind = "crash"
	// Restart restarts a crashed node (a recovery).
	Restart sched.Kind = "restart"
	// Partition cuts a node (its group) off from every other (healed by
	// Heal).
	Partition sched.Kind = "partition"
	// Heal ends a cut of the network (a recovery).
	Heal sched.Kind = "heal"
	// Drop discards one UDP datagram in flight.
	Drop sched.Kind = "drop"
	// Pause stops every thread of a node for a while (Op.Delay).
	Pause sched.Kind = "pause"
	// ClockJump moves a node's wall clock (a clock fault).
	ClockJump sched.Kind = "clock"
	// ClockDrift makes a node's wall clock run fast or slow (a clock
	// fault); its Delay is the rate in parts per million.
	ClockDrift sched.Kind = "drift"
	// Reset aborts one TCP connection of a node: the peer sees
	// ECONNRESET, the node ECONNABORTED, and the bytes in flight on it
	// either way are lost.
	Reset sched.Kind = "reset"
)

func init() {
	define(Crash, kindDef{possible: possibleUp, detail: detailOutage, chose: choseCrash, keep: keepDelay, lasts: outageSpan, act: ActCrash, replay: sched.FaultReplay{Remake: true}})
	define(Pause, kindDef{possible: possibleUp, detail: detailPause, chose: chosePause, keep: keepDelay, lasts: pauseSpan, act: ActHold, replay: sched.FaultReplay{Remake: true}})
	define(Partition, kindDef{
		possible: func(in *Injector, o *sched.Op) bool {
			return in.cutRoom() && (len(in.cuts) == 0 || !in.clashes(in.partitionCut(o.Node)))
		},
		detail: detailOutage, chose: chosePartition, keep: keepDelay, lasts: outageSpan, onTraffic: true, act: ActCut, replay: sched.FaultReplay{Remake: true},
	})
	define(ClockJump, kindDef{
		possible: func(in *Injector, o *sched.Op) bool { return !in.crashed[o.Node] && in.plan.MaxClockJump > 0 },
		detail:   detailClockJump,
		keep:     keepDelay,
		chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
			in.spend(now)
			e.Shift = time.Duration(o.Delay)
			in.skew[o.Node] += e.Shift
			return nil
		},
		act: ActClock, replay: sched.FaultReplay{Remake: true},
	})
	define(ClockDrift, kindDef{
		possible: func(in *Injector, o *sched.Op) bool { return !in.crashed[o.Node] && in.plan.MaxDrift > 0 },
		detail:   detailDrift,
		keep:     keepDelay,
		chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
			in.spend(now)
			e.Drift = o.Delay
			in.drifts[o.Node] = true
			return nil
		},
		act: ActDrift, replay: sched.FaultReplay{Remake: true},
	})
	define(Reset, kindDef{possible: possibleReset, detail: detailReset, chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
		in.spend(now)
		e.Sock = o.Object
		return nil
	}, act: ActReset, needs: NeedSocks})
	define(Drop, kindDef{possible: possibleDrop, detail: detailDrop, chose: func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
		if o.Made() {
			choseAimedDrop(in, o, now, e)
			return nil
		}
		e.Datagram = uint64(o.Delay)
		if in.firedArmed(o) {
			return nil // spent when it was armed
		}
		in.spend(now)
		return nil
	}, act: ActDrop, needs: NeedDatagrams})
	recovery := sched.FaultReplay{Recovery: true}
	define(Restart, kindDef{chose: choseRestart, act: ActRestart, replay: recovery})
	define(Heal, kindDef{chose: choseHeal, act: ActHeal, replay: recovery})
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
		return slices.ContainsFunc(in.dgrams, func(d Datagram) bool { return in.droppable(d, o.Node) })
	}
	return slices.ContainsFunc(in.dgrams, func(d Datagram) bool { return dropObject(d.ID) == o.Object })
}

// droppable reports whether a drop offered on node may discard d: a
// datagram from or to it, of the kind the plan drops if it names one.
func (in *Injector) droppable(d Datagram, node string) bool {
	return (d.From == node || d.To == node) && in.dropMatches(d.Msg, d.Bytes)
}

// dropMatches says whether a drop may lose a datagram of n bytes with
// these first bytes: any, unless the plan's drop.match names some.
func (in *Injector) dropMatches(msg string, n int) bool {
	return len(in.plan.DropMatch) == 0 || matchesAny(in.plan.DropMatch, msg, n)
}

// detailOutage draws how long a crash or partition lasts.
func detailOutage(in *Injector, o *sched.Op) {
	if in.plan.MaxOutage > 0 {
		o.Delay = int64(in.outage())
	}
}

func detailPause(in *Injector, o *sched.Op) {
	lo, hi := pauseSpan(in.plan)
	o.Delay = int64(between(in.r, lo, hi))
}

// outageSpan is what an outage's length is drawn from (MinOutage to
// MaxOutage); pauseSpan a pause's.
func outageSpan(p Plan) (least, most time.Duration) {
	return shortest(p.MinOutage, p.MaxOutage), p.MaxOutage
}

func pauseSpan(p Plan) (least, most time.Duration) {
	return shortest(p.MinPause, p.MaxPause), p.MaxPause
}

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
		if in.droppable(d, o.Node) {
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
	in.putCut(c)
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
	c := in.liftCut(i)
	e.Cut, e.Rest, e.OneWay = c.a, c.b, c.oneway
	delete(in.recov, "heal:"+o.Node)
	delete(in.until, "heal:"+o.Node)
	return nil
}
