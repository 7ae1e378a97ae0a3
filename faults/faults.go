package faults

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/netcut"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// Plan is what a spec allows (spec section `faults`).
type Plan struct {
	// Kinds are the injections offered (Crash, Partition, Pause, ...:
	// any of Kinds() but the recoveries). Recoveries (restart after a
	// crash, heal after a partition) are offered whenever there is
	// something to recover, and belong in no plan.
	Kinds []sched.Kind
	// Nodes may be crashed, paused or cut off.
	Nodes []string
	// Budget is the number of injections per trial.
	Budget int
	// From and Until bound the virtual time in which injections happen.
	// At Until the quiet period starts: every partition heals, every
	// paused node resumes, every crashed node restarts, and no fault is
	// offered again, so the system can recover before its clients' final
	// checks.
	From, Until time.Duration
	// Spread places the injections over [From, Until): each gets a
	// trigger drawn from the seed and is offered only from then on (see
	// Placer). Without it (a spec without faults.until, whose window
	// ends at the virtual-time limit, far past most runs) injections are
	// offered from From on.
	Spread bool
	// By is what the triggers are drawn over: the window's virtual time,
	// its steps, or either with even odds (the default).
	By By
	// Expect is the steps the window is expected to hold, over which step
	// triggers are drawn: the engine sets it from its campaign's trial 0
	// (0 there: every trigger is a time).
	Expect int
	// MaxPause bounds a pause; each lasts MinPause (0: a tenth of
	// MaxPause) to MaxPause.
	MaxPause, MinPause time.Duration
	// MaxOutage bounds how long a crashed node stays down and a partition
	// lasts before its restart or heal is offered, and how long a link
	// is slow or flaps: each outage lasts MinOutage (0: a tenth of
	// MaxOutage) to all of it, drawn from the seed, so that it can
	// outlast the system's own timeouts (an election, a lease).
	MaxOutage, MinOutage time.Duration
	// MaxClockJump bounds a clock fault: a node's wall clock jumps by up
	// to this much, in ClockDirection.
	MaxClockJump time.Duration
	// ClockDirection is which way a clock jump goes (and whether a drift
	// runs fast or slow); the zero value is both ways, with even odds.
	ClockDirection Direction
	// KeepClock, when set, leaves a node's wall clock where its clock
	// jumps put it when the quiet period begins. By default the quiet
	// period sets it back, which is itself a jump the other way (a
	// backward jump's undo is a forward jump).
	KeepClock bool
	// MaxDrift bounds a drift fault, in parts per million: a node's wall
	// clock runs fast or slow by up to this rate.
	MaxDrift int64
	// Groups are nodes that stay on one side of every partition: cutting
	// off a node cuts off its group (a server with the clients beside it,
	// as in a data centre), so those clients still reach it.
	Groups [][]string
	// MaxHold bounds a hold: one connection direction's deliveries wait
	// up to this long while every other flows.
	MaxHold time.Duration
	// Match, when set, makes each hold one of a kind of message: for its
	// length it holds every delivery to (or from, HoldDir) its node whose
	// bytes match one of the patterns, on every connection, while other
	// messages flow (see match.go).
	Match []Pattern
	// HoldDir is which of the node's messages such a hold holds.
	HoldDir HoldDir
	// SlowMatch, when set, makes a slow link delay only the deliveries
	// whose bytes match one of the patterns (one kind of message; the
	// others cross it at once); DropMatch makes a drop discard only such
	// a datagram.
	SlowMatch, DropMatch []Pattern
	// Shape says whether a message (its first bytes and its whole length)
	// is of a learned kind's shape, for holds aimed at one kind on one
	// link (KindHold); the engine's (package coverage shapes messages).
	// Nil: such holds hold nothing.
	Shape func(msg string, n int, shape string) bool
	// ShapeOf is a message's shape (its first bytes and its whole
	// length), for grays, which let one shape through (gray.go); the
	// engine's, as Shape is. Nil: grays are never drawn.
	ShapeOf func(msg string, n int) string
	// Shapes are the bipartition shapes drawn (ShapeIsolate, ShapeMinority,
	// ShapeBridge).
	Shapes []string
	// Probe, when set, aims each injection at the node it names, run at the
	// moment of the injection (see Injector.Aim).
	Probe []string
	// Overlap is how many network cuts (partition, oneway, link,
	// bipartition) may be in force at once, each healed on its own; 0 or
	// 1: one at a time. Cuts in force together never share a link (a pair
	// of nodes), so each puts up and takes down its own firewall rules.
	// Other faults overlap whatever it says: pauses, holds and crashes of
	// different nodes, clock faults.
	Overlap int
	// Follow makes groups follow their node: at each injection, a node
	// outside Nodes (a client) connected to exactly one of Nodes stands on
	// its side of the cut.
	Follow bool
	// Disk bounds the storage faults (power, corrupt, ioerror, stall):
	// the spec's plan as it is, since nothing in it needs mapping.
	Disk spec.DiskPlan
}

// Direction is which way a clock fault moves a node's wall clock.
type Direction uint8

const (
	Both Direction = iota
	Forward
	Backward
)

var directionNames = [...]string{Both: "both", Forward: "forward", Backward: "backward"}

func (d Direction) String() string { return directionNames[d] }

// ParseDirection is the inverse of Direction.String.
func ParseDirection(s string) (Direction, bool) {
	for d, n := range directionNames {
		if n == s {
			return Direction(d), true
		}
	}
	return Both, false
}

// side is what a partition that cuts off node isolates: its group, or the
// node alone.
func (p Plan) side(node string) []string {
	for _, g := range p.Groups {
		if slices.Contains(g, node) {
			return g
		}
	}
	return []string{node}
}

// Enabled reports whether the plan offers any fault.
func (p Plan) Enabled() bool { return p.Budget > 0 && len(p.Kinds) > 0 && len(p.Nodes) > 0 }

// Effect is what the engine must do for a chosen fault.
type Effect struct {
	Kind sched.Kind
	// Act is how the engine carries the fault out (the kind's mechanism).
	Act  Act
	Node string // crash, restart, pause: the node
	// Cut and Rest are the two sides of a partition or heal.
	Cut, Rest []string
	// OneWay says only what Cut sends to Rest is cut.
	OneWay bool
	// Shift moves Node's wall clock (a clock fault, or its undoing in the
	// quiet period).
	Shift time.Duration
	// Drift is the rate, in parts per million, at which Node's wall clock
	// runs fast (slow when negative) from now on; 0 ends a drift and takes
	// back what it gained (the quiet period).
	Drift int64
	// Sock is the Sock.Object of the connection a reset aborts.
	Sock string
	// Datagram is the deliver op ID of the datagram a drop discards.
	Datagram uint64
	// Disk, Pick and Call are a storage fault's variant (sched.Op's Disk,
	// Pick and Syscall), File and Spot the file and the place in it
	// a forced corruption damages again (sched.Op's File and Spot); Stall is
	// how long a stalled fsync takes.
	Disk  string
	Pick  uint64
	Call  string
	File  string
	Spot  string
	Stall time.Duration
}

// Targets are what a reset or a drop may hit at a step.
type Targets struct {
	// Socks are the nodes' connected TCP sockets (for resets).
	Socks []Sock
	// Datagrams are the UDP datagrams in flight (for drops).
	Datagrams []Datagram
	// Conns are the connection directions with deliveries pending (for
	// holds).
	Conns []Conn
	// Peers are, per node, the nodes its connected TCP sockets lead to
	// (for groups that follow their node).
	Peers map[string][]string
	// DataFiles are, per node, how many data files it wrote during the
	// trial (for corruptions).
	DataFiles map[string]int
}

// Datagram is a UDP datagram in flight: the ID of its deliver op, the
// nodes that sent it and will receive it.
type Datagram struct {
	ID       uint64
	From, To string
	Conn     string // "src>dst", for humans
	// Msg is its first bytes (sched.Op.Msg), for drops of one kind
	// (Plan.DropMatch), and Bytes its whole length, for an aimed drop's
	// shape.
	Msg   string
	Bytes int
}

// Sock is a node's connected TCP socket, which a reset may abort.
type Sock struct {
	Node string
	// Object names the socket across runs (its process and descriptor).
	Object string
	// Conn is "local>peer", for humans.
	Conn string
}

// The injector's random streams: its draws, and its triggers'.
const (
	faultsStream  = 0x6661756c7473   // "faults"
	triggerStream = 0x74726967676572 // "trigger"
)

// idBase keeps fault ops' IDs apart from the tracer's and from advance ops.
const idBase = uint64(1) << 52

// Injector is one trial's fault state.
type Injector struct {
	plan   Plan
	all    []string // every node, for the other side of a partition
	r      *rand.Rand
	budget int

	crashed map[string]bool
	cuts    []*netCut // the network cuts in force, in the order made
	// cutLinks are the links those cuts hold (putCut, liftCut): what the
	// injector holds back across them, and whether a new cut would share
	// one.
	cutLinks netcut.Set[string]
	held     map[string]time.Duration // connection direction → end of its hold
	// kindHolds are the kind-aimed holds in force (KindHold), by their
	// keys in held.
	kindHolds map[string]kindHold
	// kindSlows are the kind-aimed slows in force (KindSlow), by key.
	kindSlows map[string]*kindSlow
	// armed are the aimed drops waiting for a datagram of their kind
	// (AimedDrop), by key.
	armed  map[string]*armedDrop
	paused map[string]time.Duration // node → end of its pause
	skew   map[string]time.Duration // node → how far its wall clock was moved
	drifts map[string]bool          // nodes whose wall clocks drift
	// own is the state in force of the kinds that keep their own
	// (kindDef.holds, kindDef.deadline), by kind; the quiet period clears it.
	own   map[sched.Kind]any
	quiet bool

	socks  []Sock     // the connections a reset may abort, at this step
	dgrams []Datagram // the datagrams a drop may discard, at this step
	conns  []Conn     // the connection directions a hold may hold, at this step
	peers  map[string][]string
	// dataFiles are the nodes' written data files (Targets.DataFiles).
	dataFiles map[string]int
	offer     *sched.Op // the injection on offer
	// offerCorrupt is the corruption on offer (corruptOffer).
	offerCorrupt *sched.Op
	// offerCut is the cut the injection on offer makes, drawn with it.
	offerCut *netCut
	// keptCut is the cut the trace recorded for the cut being chosen
	// (keepDraw), which choseCut puts up instead of the one drawn.
	keptCut *netCut
	// Aim runs the plan's probe for a fault at the moment it is injected
	// and returns what it printed; the engine sets it (a replay's returns
	// the answer the trace recorded instead).
	Aim func(o *sched.Op) (Aiming, error)
	// Recall is, in a replay or a forced run, the trace's record of the
	// fault being chosen (nil: none, or no such run): the fault keeps its
	// draws (keepDraw). The engine sets it.
	Recall func() *sched.Op
	recov  map[string]*sched.Op
	// until is when the recovery of a fault in force is first offered,
	// keyed like recov.
	until  map[string]time.Duration
	nextID uint64
	// place holds the injections' triggers (nil when not spread).
	place *Placer
	// step and now are the trial's step count and virtual time at the
	// last Observe.
	step int
	now  time.Duration
	// trigger is the kind of the trigger the last injection used.
	trigger string
	// owned are the plan's kinds that keep their own state (kindDef.holds
	// or deadline), for Holds and Deadline.
	owned []kindDef
}

// New starts a trial's injector; all lists every node of the cluster.
func New(plan Plan, all []string, seed int64) *Injector {
	in := &Injector{
		plan: plan, all: all, budget: plan.Budget,
		r:       rand.New(rand.NewPCG(uint64(seed), faultsStream)),
		crashed: map[string]bool{}, paused: map[string]time.Duration{}, skew: map[string]time.Duration{}, drifts: map[string]bool{},
		recov: map[string]*sched.Op{}, until: map[string]time.Duration{}, nextID: idBase, held: map[string]time.Duration{},
		kindHolds: map[string]kindHold{}, kindSlows: map[string]*kindSlow{}, armed: map[string]*armedDrop{}, own: map[sched.Kind]any{},
	}
	for _, k := range plan.Kinds {
		if d := kindDefs[k]; d.holds != nil || d.deadline != nil {
			in.owned = append(in.owned, d)
		}
		if d := kindDefs[k]; d.start != nil {
			d.start(in)
		}
	}
	if plan.Spread {
		in.place = NewPlacer(plan.Budget, plan.From, plan.Until, plan.By, plan.Expect, seed, triggerStream)
	}
	return in
}

// Observe tells the injector the trial's step count at now; the engine
// calls it at every decision, before Offer.
func (in *Injector) Observe(now time.Duration, step int) {
	if in == nil {
		return
	}
	in.step, in.now = step, now
	if in.place != nil {
		in.place.Observe(now, step)
	}
}

// Reseed draws the rest of the trial's injections from seed (a forked
// run, sched.Forker): the kinds, targets and sizes of those not yet
// drawn, and the triggers of those not yet made. The injection on offer
// stays: it was drawn before the fork.
func (in *Injector) Reseed(seed int64) {
	if in == nil {
		return
	}
	in.r = rand.New(rand.NewPCG(uint64(seed), faultsStream))
	if in.place != nil {
		in.place.Redraw(seed, triggerStream, in.now, in.step)
	}
}

// WindowSteps is how many steps the window held up to step (Placer.Steps),
// 0 when the plan is not spread.
func (in *Injector) WindowSteps(step int) int {
	if in == nil || in.place == nil {
		return 0
	}
	return in.place.Steps(step)
}

// due says whether the next injection of the budget may be offered at now.
func (in *Injector) due(now time.Duration) bool {
	if in.place == nil {
		return now >= in.plan.From
	}
	return in.place.Due(now, in.step)
}

// Crashed reports whether a node is down because of an injected crash: its
// processes' deaths are the fault, not a bug.
func (in *Injector) Crashed(node string) bool { return in.crashed[node] }

func (in *Injector) op(kind sched.Kind, node, object string) *sched.Op {
	in.nextID++
	return &sched.Op{ID: in.nextID, Node: node, LPID: "fault", Kind: kind, Object: object}
}

// Offer returns the fault ops to offer beside the enabled ops at now: at
// most one injection (its kind and target drawn from the seed, kept until
// chosen or no longer possible, so priority strategies see one pending op)
// and one recovery op per fault in force. socks are the connections a
// reset may abort and the datagrams a drop may discard now.
func (in *Injector) Offer(now time.Duration, tg Targets) []*sched.Op {
	in.socks, in.dgrams, in.conns, in.peers, in.dataFiles = tg.Socks, tg.Datagrams, tg.Conns, tg.Peers, tg.DataFiles
	var out []*sched.Op
	if !in.quiet && in.budget > 0 && in.due(now) && now < in.plan.Until {
		if in.offer == nil || !in.possible(in.offer) || in.offerCut != nil && in.clashes(in.offerCut) {
			in.offer = in.draw()
		}
		if in.offer != nil {
			out = append(out, in.offer)
		}
	}
	if c := in.corruptOffer(now); c != nil {
		out = append(out, c)
	}
	for _, n := range in.all {
		if in.crashed[n] && now >= in.until["restart:"+n] {
			out = append(out, in.recovery(Restart, n))
		}
	}
	for _, c := range in.cuts {
		if now >= in.until["heal:"+c.name] {
			out = append(out, in.recovery(Heal, c.name))
		}
	}
	return append(out, in.armedOffers()...)
}

// Spread reports whether injections are placed at triggers (Plan.Spread).
func (in *Injector) Spread() bool { return in.plan.Spread }

// InLull returns the injection among offers to take alone when nothing
// else can run (the clock jumped to its trigger), or nil: only a spread
// plan's, so that a fault lands at its trigger and not at the next burst
// of ops. A cut of the network (partition, oneway, link, bipartition) or
// a hold acts on messages in flight, and in a lull there are none: it
// waits to be offered among the next burst's ops, unless the clock's next
// wake (next, when wakes) is not before the quiet period.
// Recoveries too wait for ops to run beside. A nil Injector offers
// nothing.
func (in *Injector) InLull(offers []*sched.Op, next time.Duration, wakes bool) *sched.Op {
	if in == nil {
		return nil
	}
	if o := in.armedInLull(offers); o != nil {
		return o
	}
	if !in.plan.Spread {
		return nil
	}
	if in.offerCorrupt != nil && slices.Contains(offers, in.offerCorrupt) {
		// A down node's disk is corrupted before the clock moves on to
		// its restart.
		return in.offerCorrupt
	}
	if in.offer == nil {
		return nil
	}
	if kindDefs[in.offer.Kind].onTraffic && wakes && next < in.plan.Until {
		return nil
	}
	for _, o := range offers {
		if o == in.offer {
			return o
		}
	}
	return nil
}

func (in *Injector) recovery(kind sched.Kind, node string) *sched.Op {
	key := kind.String() + ":" + node
	if o := in.recov[key]; o != nil {
		return o
	}
	o := in.op(kind, node, "node:"+node)
	in.recov[key] = o
	return o
}

// possible says whether an injection still makes sense.
func (in *Injector) possible(o *sched.Op) bool {
	if o.Object == probeObject {
		return in.possibleAny(o.Kind)
	}
	if d := kindDefs[o.Kind]; d.possible != nil {
		return d.possible(in, o)
	}
	return false
}

// dropObject names a datagram by its deliver op's ID, which is the same in
// every run of the schedule.
func dropObject(id uint64) string { return "datagram:" + strconv.FormatUint(id, 10) }

// candidate is an injection draw may offer: a kind and its node.
type candidate struct {
	kind sched.Kind
	node string
}

func (in *Injector) draw() *sched.Op {
	var cs []candidate
	for _, k := range in.plan.Kinds {
		if k == Corrupt {
			continue // offered while a node is down (corruptOffer)
		}
		for _, n := range in.plan.Nodes {
			c := &sched.Op{Kind: k, Node: n}
			if in.possible(c) {
				cs = append(cs, candidate{k, n})
			}
		}
	}
	if len(cs) == 0 {
		return nil
	}
	if in.aimed() {
		return in.drawAimed(cs)
	}
	c := cs[in.r.IntN(len(cs))]
	o := in.op(c.kind, c.node, "node:"+c.node)
	in.detail(o)
	if in.offerCut != nil && in.clashes(in.offerCut) {
		// Drawn across a link a cut in force holds: drawn again at the
		// next step.
		in.offerCut = nil
		return nil
	}
	return o
}

// detail draws the size and target of an injection on o.Node.
func (in *Injector) detail(o *sched.Op) {
	if d := kindDefs[o.Kind]; d.detail != nil {
		d.detail(in, o)
	}
}

// Chose applies a chosen fault op at now and returns what the engine must do.
func (in *Injector) Chose(o *sched.Op, now time.Duration) (Effect, error) {
	in.trigger = ""
	if o.Object == probeObject && o.Node == "" {
		if err := in.aim(o); err != nil {
			return Effect{}, err
		}
	}
	in.keptCut = nil
	if in.Recall != nil {
		in.keepDraw(o, in.Recall())
	}
	d, ok := kindDefs[o.Kind]
	e := Effect{Kind: o.Kind, Act: d.act, Node: o.Node}
	if !ok {
		return e, fmt.Errorf("faults: %v is not a fault op", o.Kind)
	}
	if err := d.chose(in, o, now, &e); err != nil {
		return e, err
	}
	if o == in.offer {
		in.offer = nil
	}
	if o == in.offerCorrupt {
		in.offerCorrupt = nil
	}
	return e, nil
}

func (in *Injector) others(cut []string) []string {
	var rest []string
	for _, n := range in.all {
		if !slices.Contains(cut, n) {
			rest = append(rest, n)
		}
	}
	return rest
}

// Quiet reports whether the quiet period is due at now and not yet begun;
// the engine then calls Recover.
func (in *Injector) Quiet(now time.Duration) bool {
	return !in.quiet && now >= in.plan.Until
}

// Recover begins the quiet period: it returns the recoveries to apply (a
// heal, then a restart per crashed node, in spec order) and ends pauses.
func (in *Injector) Recover() []Effect {
	in.quiet = true
	in.offer, in.offerCorrupt = nil, nil
	var out []Effect
	for len(in.cuts) > 0 {
		c := in.liftCut(0)
		out = append(out, Effect{Kind: Heal, Act: ActHeal, Node: c.name, Cut: c.a, Rest: c.b, OneWay: c.oneway})
	}
	in.offerCut = nil
	clear(in.held)
	clear(in.kindHolds)
	clear(in.kindSlows)
	clear(in.armed)
	clear(in.own)
	for _, n := range in.all {
		if in.crashed[n] {
			out = append(out, Effect{Kind: Restart, Act: ActRestart, Node: n})
			delete(in.crashed, n)
		}
	}
	for _, n := range in.all {
		if in.drifts[n] {
			out = append(out, Effect{Kind: ClockDrift, Act: ActDrift, Node: n})
		}
		if d := in.skew[n]; d != 0 && !in.plan.KeepClock {
			out = append(out, Effect{Kind: ClockJump, Act: ActClock, Node: n, Shift: -d})
		}
	}
	clear(in.drifts)
	clear(in.skew)
	clear(in.until)
	clear(in.recov)
	clear(in.paused)
	return out
}

// Holds reports whether a fault holds an op back at now: every op of a
// paused node's threads, deliveries on a held connection direction, and
// deliveries and blocking connects across a cut.
// nodeOf names the node of a cluster address ("" when none).
func (in *Injector) Holds(o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	if end, ok := in.paused[o.Node]; ok && o.Kind != sched.Deliver {
		if now < end {
			return true
		}
		delete(in.paused, o.Node)
	}
	if o.Kind == sched.Deliver && len(in.held) > 0 && (in.heldConn(o.Conn, now) || len(in.plan.Match) > 0 && in.heldMessage(o, now, nodeOf) ||
		len(in.kindHolds) > 0 && in.heldKind(o, now, nodeOf)) {
		return true
	}
	if len(in.kindSlows) > 0 && in.slowedKind(o, now, nodeOf) {
		return true
	}
	if len(in.armed) > 0 && in.heldForDrop(o, nodeOf) {
		return true
	}
	if len(in.own) > 0 {
		for _, d := range in.owned {
			if d.holds != nil && d.holds(in, o, now, nodeOf) {
				return true
			}
		}
	}
	if in.cutLinks.Empty() {
		return false
	}
	switch o.Kind {
	case sched.Deliver:
		src, dst, ok := strings.Cut(o.Conn, ">")
		if !ok {
			return false
		}
		return in.cutLinks.Stops(addrNode(src, nodeOf), addrNode(dst, nodeOf))
	case sched.Connect:
		// A non-blocking connect goes: its SYN is lost in the cut and the
		// program's own timeout (a poll's) runs in virtual time. A
		// connection opens across no cut, even a one-way one: its
		// handshake needs both ways.
		peer := addrNode(o.Peer, nodeOf)
		return !o.NonBlocking && in.cutLinks.Between(o.Node, peer)
	}
	return false
}

func addrNode(s string, nodeOf func(netip.Addr) string) string {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ""
	}
	return nodeOf(ap.Addr().Unmap())
}

// Deadline is the earliest end of a pause in force, the next injection's
// trigger, or the start of the quiet period while faults are in force: the
// clock may jump there when nothing else can run.
func (in *Injector) Deadline(now time.Duration) (time.Duration, bool) {
	e := soonest{now: now}
	if tr, ok := in.nextTrigger(now); ok {
		e.at, e.ok = tr, true // it may be now, which offer would pass over
	}
	e.offerEach(in.paused)
	e.offerEach(in.until)
	e.offerEach(in.held)
	in.kindSlowDeadline(&e)
	if len(in.own) > 0 {
		for _, kd := range in.owned {
			if kd.deadline == nil {
				continue
			}
			if end, has := kd.deadline(in, now); has {
				e.offer(end)
			}
		}
	}
	if !in.quiet && (len(in.cuts) > 0 || len(in.crashed) > 0 || in.Armed()) {
		// An armed drop's datagram waits for its drop; should the drop be
		// declined (a branch's late change), the quiet period lets it go.
		e.offer(in.plan.Until)
	}
	return e.at, e.ok
}

// nextTrigger is the next injection's trigger while the plan spreads its
// injections, budget is left and the quiet period has not begun, when it
// falls before that period.
func (in *Injector) nextTrigger(now time.Duration) (time.Duration, bool) {
	if in.place == nil || in.quiet || in.budget <= 0 {
		return 0, false
	}
	tr, next := in.place.Next(now)
	return tr, next && tr < in.plan.Until
}

// soonest keeps the earliest of the instants after now offered to it.
type soonest struct {
	now, at time.Duration
	ok      bool
}

func (s *soonest) offer(t time.Duration) {
	if t > s.now && (!s.ok || t < s.at) {
		s.at, s.ok = t, true
	}
}

// offerEach offers every instant of m (ends keyed by node or fault).
func (s *soonest) offerEach(m map[string]time.Duration) {
	for _, t := range m {
		s.offer(t)
	}
}

// upTo draws a duration from a tenth of m to all of it, in whole ms.
func (in *Injector) upTo(m time.Duration) time.Duration { return upTo(in.r, m) }

func upTo(r *rand.Rand, m time.Duration) time.Duration { return between(r, m/10, m) }

// between draws a duration from least to most, in whole ms. With least a
// tenth of most it is upTo's draw, so a plan without a shortest draws
// what it drew before there was one.
func between(r *rand.Rand, least, most time.Duration) time.Duration {
	return (least + time.Duration(r.Int64N(int64(most-least)+1))).Truncate(time.Millisecond)
}

// outage draws how long an outage lasts (Plan.MinOutage, MaxOutage).
func (in *Injector) outage() time.Duration {
	lo, hi := outageSpan(in.plan)
	return between(in.r, lo, hi)
}

// shortest is the shortest of a draw up to most: least if set (and not
// past most), else a tenth of most.
func shortest(least, most time.Duration) time.Duration {
	if least <= 0 {
		return most / 10
	}
	return min(least, most)
}

// spend counts an injection chosen at now against the budget and consumes
// its trigger.
func (in *Injector) spend(now time.Duration) {
	in.budget--
	in.trigger = ""
	if in.place != nil {
		in.trigger = in.place.Take(now, in.step)
	}
}

// Trigger is the kind of trigger ("time", "step") the injection chosen
// last used, "" when the plan is not spread or the last fault op chosen
// was no injection.
func (in *Injector) Trigger() string { return in.trigger }
