package sched

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Explaining a failure (package explain) measures a trace's choices against
// a default order and replays subsets of them. The default order is
// Oldest's: release the op that appeared first. A trace's decisions are the
// points where it departs from that order (see Decisions), and Forced
// replays any subset of them, leaving every other choice to the default.

// Oldest is the default order of explain: of the enabled ops it releases
// the one with the lowest ID, that is the one that appeared first (the
// tracer numbers ops as they appear, in LPID order within one quiescent
// point), and it chooses an advance or a fault op (their IDs lie above
// every traced op's) only when no traced op is offered: a node down, every
// thread waiting on a timer.
type Oldest struct{}

func (Oldest) Name() string                    { return "oldest" }
func (Oldest) Reset(int64, int)                {}
func (Oldest) Next(enabled []*Op) (int, error) { return 0, nil }

// Key identifies an op across runs of one spec, as docs/architecture.md's
// "Identity" says, by what a replay checks too (Differs) but the thread:
// its process (not its thread, which Go and the JVM do not keep, and
// which a thread-per-connection server numbers in the order its accepts
// ran), its kind and object, the call site it was made from and the
// connection it is on, and its position among the ops of that process
// released before it with all of these the same. The site and the
// connection tell apart what the thread index did not: the recvs of two
// connections on one inbox, each served by a thread of its own, are
// counted apart, so that "the first recv of 10.77.0.3's connection" is
// that op in every run, whatever the other connection's threads did; and
// a pool's connections from one process to one server are told apart by
// the order the run first named them in (Keyer.Offer). A delivery is its
// sender's; an advance the waiting thread's; a fault lockstep's (neither
// has a site or a connection of its own).
//
// Thread is set only for the ops whose identity without it two threads
// of the process had on offer at once in the run (a thread per
// connection writing a subscriber's value while another thread writes a
// publish to that subscriber, both through one write helper): which of
// the two goes first is then the race, and a key that names neither
// thread names only "the next such op", whichever thread makes it. Such
// an op is named by its thread and N counts that thread's ops alone (see
// threadShared). Replay tells them apart by the LPID; a key names the
// thread by the connection it served first (threadName), which the
// thread keeps in a run whose accepts ran in another order.
type Key struct {
	Process string `json:"process"`
	Thread  string `json:"thread,omitempty"`
	Kind    Kind   `json:"kind"`
	Object  string `json:"object,omitempty"`
	Site    string `json:"site,omitempty"`
	Conn    string `json:"conn,omitempty"`
	N       int    `json:"n"`
}

func (k Key) String() string {
	s := fmt.Sprintf("%s %s", k.Process, k.Kind)
	if k.Thread != "" {
		s = fmt.Sprintf("%s %s %s", k.Process, k.Thread, k.Kind)
	}
	if k.Object != "" {
		s += " " + k.Object
	}
	if k.Conn != "" {
		s += " " + k.Conn
	}
	return s + fmt.Sprintf(" #%d", k.N)
}

type keyBase struct {
	process string
	thread  string // only for a base in Keyer.byThread
	kind    Kind
	object  string
	site    string
	conn    string
}

// baseOfKey is k's base without its thread.
func baseOfKey(k Key) keyBase {
	return keyBase{process: k.Process, kind: k.Kind, object: k.Object, site: k.Site, conn: k.Conn}
}

// Keyer names a run's ops as they are offered and released. Feed it
// every list of choices (Offer) before the op released from it
// (Released): a connection is named by when the run first offered an op
// on it, and a run that follows a trace's order offers them in the
// trace's order.
type Keyer struct {
	released map[keyBase]int
	conns    connNames
	// byThread are the bases (without a thread) whose ops are named by
	// their thread (Key.Thread).
	byThread map[keyBase]bool
	// threads are, by LPID, the connection of each thread's first
	// released op on one (threadName).
	threads map[string]string
	// datagrams are, by op ID, each datagram deliver's place among its
	// base's datagrams in the order the run offered them (datagramN);
	// offered counts them by base.
	datagrams map[uint64]int
	offered   map[keyBase]int
}

// NewKeyer starts a run. Its ops are named by their thread where one of
// named does: a key with a Thread names every op of its base by its
// thread (a forced run names its ops as the trace its decisions come
// from did).
func NewKeyer(named ...Key) *Keyer {
	k := &Keyer{released: map[keyBase]int{}, conns: connNames{ord: map[ephemeralEnd]int{}, count: map[connEnds]int{}}, byThread: map[keyBase]bool{}, threads: map[string]string{},
		datagrams: map[uint64]int{}, offered: map[keyBase]int{}}
	for _, n := range named {
		if n.Thread != "" {
			k.byThread[baseOfKey(n)] = true
		}
	}
	return k
}

// connNames names connections across runs. The tracer binds a connecting
// socket to its node's next ephemeral port (tracer's bindEphemeral), so
// the port a connection gets is the number of the node's connects before
// it, to any server: another order of a node's connects to two servers
// gives each another port. The port is replaced by the connection's rank
// among the node's connections to the same server, in the order the run
// first named them: "10.77.0.3:32770>10.77.0.2:7000" is
// "10.77.0.3#0>10.77.0.2:7000" when it is the first connection from
// 10.77.0.3 to 10.77.0.2:7000 the run offered an op on, and the pool's
// second connection there is "10.77.0.3#1>10.77.0.2:7000". (Leaving the
// port out alone made a pool's connections one: the delivery of a set on
// one and of a delete on the other had one name, and a hold of the one
// held whichever came first.) The listening side's port is the program's
// and stays.
type connNames struct {
	ord   map[ephemeralEnd]int
	count map[connEnds]int
}

// connEnds is a connection without its ephemeral port: the connecting
// host and the other end.
type connEnds struct{ host, other string }

// ephemeralEnd is a connecting end: its host and port and the other end.
type ephemeralEnd struct {
	connEnds
	port string
}

// firstEphemeral is Linux's default first local port, where the tracer's
// bindEphemeral starts.
const firstEphemeral = 32768

// ephemeral splits a connection "src>dst" and says which of its ends is
// the connecting one, bound to an ephemeral port: ok is false when the
// connection does not parse or when neither or both ends are (a server
// listening on a port of the ephemeral range).
func ephemeral(conn string) (end ephemeralEnd, srcSide bool, src, dst string, ok bool) {
	src, dst, found := strings.Cut(conn, ">")
	if !found {
		return end, false, src, dst, false
	}
	sh, sp, sEph := splitEphemeral(src)
	dh, dp, dEph := splitEphemeral(dst)
	switch {
	case sEph && !dEph:
		return ephemeralEnd{connEnds{sh, dst}, sp}, true, src, dst, true
	case dEph && !sEph:
		return ephemeralEnd{connEnds{dh, src}, dp}, false, src, dst, true
	}
	return end, false, src, dst, false
}

// splitEphemeral splits host:port and says whether the port is in the
// ephemeral range.
func splitEphemeral(hostPort string) (host, port string, eph bool) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return hostPort, "", false
	}
	n, err := strconv.Atoi(port)
	return host, port, err == nil && n >= firstEphemeral
}

// see numbers conn's connecting end if it is new to the run.
func (c *connNames) see(conn string) {
	end, _, _, _, ok := ephemeral(conn)
	if !ok {
		return
	}
	if _, ok := c.ord[end]; !ok {
		c.ord[end] = c.count[end.connEnds]
		c.count[end.connEnds]++
	}
}

// name is conn as it is named across runs. A connecting end the run has
// not named yet gets the next rank, which it gets when it is seen. Both
// ends' ports are left out when both lie in the ephemeral range: which
// side connected is not known.
func (c *connNames) name(conn string) string {
	end, srcSide, src, dst, ok := ephemeral(conn)
	if !ok {
		if src, dst, found := strings.Cut(conn, ">"); found {
			return unephemeral(src) + ">" + unephemeral(dst)
		}
		return conn
	}
	r, seen := c.ord[end]
	if !seen {
		r = c.count[end.connEnds]
	}
	named := end.host + "#" + strconv.Itoa(r)
	if srcSide {
		return named + ">" + dst
	}
	return src + ">" + named
}

func unephemeral(hostPort string) string {
	if host, _, eph := splitEphemeral(hostPort); eph {
		return host
	}
	return hostPort
}

func (k *Keyer) baseOf(o *Op) keyBase {
	b := keyBase{process: o.Process(), kind: o.Kind, object: o.IdentityObject()}
	switch {
	case o.Kind == Advance:
		b.object = o.Syscall // the wait it runs to, not "time"
	case !o.Kind.IsFault():
		b.site, b.conn = o.Site, k.conns.name(o.Conn)
		if k.byThread[b] {
			b.thread = k.threadName(o.LPID)
		}
	}
	return b
}

// threadName names a thread across runs, for the keys that name their
// thread: by the connection of its first op the run released that was on
// one, as "on 10.77.0.3#0>10.77.0.1:7000", else by its index ("t3").
// lockstep numbers a process's threads in the order they were created,
// and a server with a thread per connection creates them in the order
// its accepts ran, which a forced run need not keep (a run that leaves
// the clients' connects to the default order makes the subscriber's
// thread t1 where the trace had t2); the connection a thread served
// first is that thread's in every run. A thread's pending op does not
// rename it: it is named by what it did before.
func (k *Keyer) threadName(lpid string) string {
	if c, ok := k.threads[lpid]; ok {
		return "on " + c
	}
	return threadOf(lpid)
}

// threadOf is the thread part of an LPID ("t3" of "db1/0.1/t3").
func threadOf(lpid string) string {
	if i := strings.LastIndex(lpid, "/t"); i >= 0 {
		return lpid[i+1:]
	}
	return ""
}

// threadShared are the bases (without a thread) of a run's ops on a
// connection that two threads of one process had on offer at once: a
// thread per connection writing on a subscriber's connection from the
// write helper every thread calls, while another thread writes there
// from it too. Those ops are named by their thread (Key.Thread): by
// their base alone, both are "the next write there", and a hold of the
// one would hold the other as well. Every other op keeps a key without
// its thread, which a Go or JVM op keeps when it runs on another thread
// in another run; one op is never on offer on two threads at once, so
// moving alone never makes a base shared. Ops on no connection are left
// out: a Go runtime's threads wait in epoll_pwait from one call site at
// once, and which thread a wait is on is the runtime's, never the
// program's. The bases are the run's as a whole, so an op's key does
// not change within a run. records and choices are as Keys takes them.
func threadShared(records []Record, choices [][]Op) map[keyBase]bool {
	k := NewKeyer()
	shared := map[keyBase]bool{}
	c := 0
	for i := range records {
		if records[i].Auto {
			continue
		}
		if c < len(choices) {
			offered := choices[c]
			for j := range offered {
				k.Offer(&offered[j])
			}
			first := map[keyBase]string{} // base → LPID of its first op here
			for j := range offered {
				o := &offered[j]
				if o.Kind == Advance || o.Kind.IsFault() || o.Conn == "" {
					continue
				}
				b := k.baseOf(o)
				if lpid, ok := first[b]; !ok {
					first[b] = o.LPID
				} else if lpid != o.LPID {
					shared[b] = true
				}
			}
		}
		c++
		k.Released(&records[i].Op)
	}
	return shared
}

// runKeyer starts naming the ops of the run whose records and choices
// are given, as Keys does.
func runKeyer(records []Record, choices [][]Op) *Keyer {
	k := NewKeyer()
	k.byThread = threadShared(records, choices)
	return k
}

// Offer tells k of an op offered: the first op offered on a connection
// names it, and a datagram's deliver is numbered among its base's
// (datagramN). Call it for each op of a list of choices, in the list's
// order, before Key or Released of any.
func (k *Keyer) Offer(o *Op) {
	k.conns.see(o.Conn)
	if !o.Datagram() {
		return
	}
	if _, ok := k.datagrams[o.ID]; !ok {
		b := k.baseOf(o)
		k.datagrams[o.ID] = k.offered[b]
		k.offered[b]++
	}
}

// Key is o's key if it were released next.
func (k *Keyer) Key(o *Op) Key {
	b := k.baseOf(o)
	return Key{Process: b.process, Thread: b.thread, Kind: b.kind, Object: b.object, Site: b.site, Conn: b.conn, N: k.position(o, b)}
}

// position is o's N: its place among the ops of base b released before
// it, but a datagram's among its base's datagrams offered before it. A
// TCP connection's deliveries run in order (only the oldest is enabled),
// so the nth released is the nth sent; a socket pair's datagrams are
// independent, and which datagram is "the second delivered" changes with
// the order (a forced run that named the third datagram by it delivered
// the second). A datagram's deliver is offered from its send on unless a
// fault holds it back: the order the run offered them is the order they
// were sent, and where a fault held one back, the same faults in another
// run hold it back alike.
func (k *Keyer) position(o *Op, b keyBase) int {
	if o.Datagram() {
		if n, ok := k.datagrams[o.ID]; ok {
			return n
		}
		return k.offered[b] // the next one offered
	}
	return k.released[b]
}

// Released counts o as released and returns its key.
func (k *Keyer) Released(o *Op) Key {
	k.Offer(o)
	key := k.Key(o)
	k.released[k.baseOf(o)]++
	if _, ok := k.threads[o.LPID]; !ok && o.Conn != "" && o.Kind != Advance && !o.Kind.IsFault() {
		k.threads[o.LPID] = k.conns.name(o.Conn)
	}
	return key
}

// Keys are the keys of a trace's released ops, in order. Auto records
// (a quiet period's recoveries, no decision of a strategy's) get none and
// are not counted. choices, when not nil, are the ops offered at each
// decision (one list per record that is not Auto, as Recorder keeps
// them), which name connections as the run first offered them (Offer);
// without them a connection is named when an op on it is released, which
// is the same unless an op on another of the server's connections from
// that host was offered before it and released after. The ops of a base
// two threads had on offer at once are named by their thread (Key).
func Keys(records []Record, choices [][]Op) []Key {
	k := runKeyer(records, choices)
	out := make([]Key, len(records))
	c := 0
	for i := range records {
		if records[i].Auto {
			continue
		}
		if c < len(choices) {
			for j := range choices[c] {
				k.Offer(&choices[c][j])
			}
		}
		c++
		out[i] = k.Released(&records[i].Op)
	}
	return out
}

// DecisionKind is how a decision departs from the default order.
type DecisionKind string

const (
	// HoldDecision: an op the default would have released was held back until
	// another op (After) had been released.
	HoldDecision DecisionKind = "hold"
	// InjectDecision: an advance or a fault op was released right after After.
	InjectDecision DecisionKind = "inject"
)

// Decision is one departure of a trace from the default order.
type Decision struct {
	Kind DecisionKind `json:"kind"`
	// Key and Op are the op held or injected, Op as the trace recorded it.
	Key Key `json:"key"`
	Op  Op  `json:"op"`
	// Step is the trace step at which the op was released; First, for a
	// hold, the first step at which it was passed over.
	Step  int `json:"step"`
	First int `json:"first,omitempty"`
	// After is the op released just before it in the trace (nil at the
	// start): a held op waits until After is released, an injected one
	// comes right after it.
	After     *Key `json:"after,omitempty"`
	AfterStep int  `json:"after_step,omitempty"`
	// Loose and VTime are, for an injected fault, After named without its
	// connection (LooseAnchor) and the virtual time at which the trace
	// made the fault: a forced run in which After has not come, Loose has,
	// and the clock reached VTime makes the fault then (Forced.Clock). Nil
	// where not known, or where After was moved from the trace's.
	Loose *Key   `json:"loose,omitempty"`
	VTime *int64 `json:"vtime,omitempty"`
	// Timed makes an injected fault due when the clock reaches VTime,
	// whatever ops came before it: a fault drawn at a time, in a run whose
	// ops come late or in another order than the trace's (explain tries
	// it where the faults alone, anchored, pass).
	Timed bool `json:"timed,omitempty"`
}

// Anchor puts an injected decision right after the op after (nil: at
// the start): its Loose anchor and Timed go with the trace's place, which
// they speak of.
func (d *Decision) Anchor(after *Key) {
	d.After, d.Loose, d.Timed = after, nil, false
}

// AtItsTime is the injected fault d made due at the time the trace made
// it (Timed), or d itself when it is no fault or that time is not known.
func (d Decision) AtItsTime() Decision {
	if d.Kind == InjectDecision && d.Op.Kind.IsFault() && d.VTime != nil {
		d.Timed = true
	}
	return d
}

// LooseAnchor is keys[j] named without its connection: N counts the ops
// of its process, kind, object and site (and thread, where keys name it)
// before it on any connection. A fault anchored on the nth message of one
// connection is, loosely, after the mth message of its process to that
// inbox: a run whose servers carried their traffic on the other of two
// connections (a route each opened to the other, one of them closed as a
// duplicate) has the second and not the first.
func LooseAnchor(keys []Key, j int) *Key {
	b := looseBase(keys[j])
	loose := b
	for _, k := range keys[:j] {
		if k != (Key{}) && looseBase(k) == b {
			loose.N++
		}
	}
	return &loose
}

// looseBase is k without its connection and its count.
func looseBase(k Key) Key {
	k.Conn, k.N = "", 0
	return k
}

func (d Decision) String() string {
	after := "the start"
	if d.After != nil {
		after = fmt.Sprintf("step %d (%v)", d.AfterStep, *d.After)
	}
	if d.Kind == HoldDecision {
		return fmt.Sprintf("hold %v (step %d) until after %s", d.Key, d.Step, after)
	}
	if d.Timed {
		return fmt.Sprintf("inject %v (step %d) at %v", d.Key, d.Step, time.Duration(*d.VTime))
	}
	return fmt.Sprintf("inject %v (step %d) right after %s", d.Key, d.Step, after)
}

// Decisions are a trace's departures from the default order, given the
// choices offered at each of its decisions (one list per record that is
// not Auto, in order; see Recorder). Every op the default would have
// released before the trace's choice at some step is a hold until the op
// released just before it in the trace; every advance and fault op the
// trace chose is an inject right after its predecessor. Forcing them all
// gives the trace's order again.
func Decisions(all []Record, choices [][]Op) ([]Decision, error) {
	var records []Record
	for _, r := range all {
		if !r.Auto {
			records = append(records, r)
		}
	}
	if len(choices) != len(records) {
		return nil, fmt.Errorf("%d decisions recorded for %d released ops", len(choices), len(records))
	}
	keys := Keys(records, choices)
	// Where each op (by key) was released.
	at := make(map[Key]int, len(keys))
	for i, k := range keys {
		at[k] = i
	}
	var out []Decision
	held := map[Key]int{} // key → index in out
	keyer := runKeyer(records, choices)
	for i := range records {
		r := &records[i]
		offered := choices[i]
		for j := range offered {
			keyer.Offer(&offered[j])
		}
		var after *Key
		afterStep := 0
		if i > 0 {
			k := keys[i-1]
			after, afterStep = &k, records[i-1].Step
		}
		if r.Op.Kind == Advance || r.Op.Kind.IsFault() {
			d := Decision{Kind: InjectDecision, Key: keys[i], Op: r.Op, Step: r.Step, After: after, AfterStep: afterStep}
			if r.Op.Kind.IsFault() && i > 0 {
				vt := r.VTime
				d.Loose, d.VTime = LooseAnchor(keys, i-1), &vt
			}
			out = append(out, d)
			keyer.Released(&r.Op)
			continue
		}
		for j := range offered {
			o := &offered[j]
			if o.ID >= r.Op.ID || o.Kind == Advance || o.Kind.IsFault() {
				continue
			}
			k := keyer.Key(o)
			if _, ok := held[k]; ok {
				continue
			}
			w, ok := at[k]
			if ok && w <= i {
				continue // this step's op under another thread
			}
			d := Decision{Kind: HoldDecision, Key: k, Op: *o, First: r.Step}
			if ok {
				d.Op, d.Step = records[w].Op, records[w].Step
				pk := keys[w-1] // w > i >= 0
				d.After, d.AfterStep = &pk, records[w-1].Step
			} else {
				// Never released: still held when the run ended, often
				// the heart of the failure (a message in flight). It is
				// held until the trace's last op.
				lk := keys[len(keys)-1]
				d.After, d.AfterStep = &lk, records[len(records)-1].Step
			}
			held[k] = len(out)
			out = append(out, d)
		}
		keyer.Released(&r.Op)
	}
	return out, nil
}

// Recorder wraps a strategy and keeps a copy of the choices offered at
// each decision: what Decisions needs besides the trace.
type Recorder struct {
	Strategy
	Choices [][]Op
}

func (r *Recorder) Next(enabled []*Op) (int, error) {
	c := make([]Op, len(enabled))
	for i, o := range enabled {
		c[i] = *o
	}
	r.Choices = append(r.Choices, c)
	return r.Strategy.Next(enabled)
}

// Recalled passes on the wrapped strategy's recorded op (Recaller).
func (r *Recorder) Recalled() *Op {
	if rc, ok := r.Strategy.(Recaller); ok {
		return rc.Recalled()
	}
	return nil
}

// OnFork passes the engine's fork on to the wrapped strategy (Forker).
func (r *Recorder) OnFork(fork func(seed int64)) {
	if f, ok := r.Strategy.(Forker); ok {
		f.OnFork(fork)
	}
}

// Extra passes on the wrapped strategy's extra ops (see Extender).
func (r *Recorder) Extra(now time.Duration, choices []*Op) []*Op {
	if x, ok := r.Strategy.(Extender); ok {
		return x.Extra(now, choices)
	}
	return nil
}

// Declines passes on the wrapped strategy's (Decliner): recording the
// choices must not change the run, and Forced and Replay decline the
// faults offered in a lull that they were not told to take.
func (r *Recorder) Declines(o *Op) bool {
	d, ok := r.Strategy.(Decliner)
	return ok && d.Declines(o)
}

// Done and Ready pass on the wrapped strategy's (Awaiter), for the same
// reason: a recorded replay settles again where a replay would. A
// strategy that forces no recorded run is never done and always ready,
// which the engine treats as no Awaiter at all.
func (r *Recorder) Done() bool {
	a, ok := r.Strategy.(Awaiter)
	return ok && a.Done()
}

func (r *Recorder) Ready(enabled []*Op) bool {
	a, ok := r.Strategy.(Awaiter)
	return !ok || a.Ready(enabled)
}

// Clocked is a strategy told the virtual time at each decision, before
// the engine asks it anything else there: Forced makes a fault due by the
// clock (dueByClock) before a lull's offer of it is declined.
type Clocked interface {
	Clock(now time.Duration)
}

// Clock passes the virtual time on to the wrapped strategy (Clocked).
func (r *Recorder) Clock(now time.Duration) {
	if c, ok := r.Strategy.(Clocked); ok {
		c.Clock(now)
	}
}

// Extender is a strategy that adds ops of its own to the choices the
// engine offers: an advance to a given time or a fault with given
// engine offers: an advance to a given time or a fault with given
// parameters, which the engine's own offers (one advance and one fault
// drawn from the seed) may not hold. now is the virtual time.
type Extender interface {
	Extra(now time.Duration, choices []*Op) []*Op
}

// extraIDBase numbers the ops an Extender makes up, above the engine's
// advance (1<<48) and fault (1<<52) ops.
const extraIDBase = uint64(1) << 56

// Forced releases a subset of a trace's decisions and leaves every other
// choice to the default order (Oldest): a held op is passed over while its
// After op has not been released, and an injected op is released at the
// first decision after its After op, or, for a fault whose After has not
// come, at the first decision after both its Loose anchor has and the
// clock reached the time the trace made it at. A decision whose op never
// appears is skipped: an injected op not among the choices (nor one Extra
// can make) at that decision is dropped, and a held op runs when every
// enabled op is held. Told the run its decisions came from (Follow), it
// follows that run until it departs from it.
type Forced struct {
	decisions []Decision
	faults    FaultReplays
	keyer     *Keyer
	done      map[Key]bool // released ops
	injected  []bool
	due       []bool // inject decisions whose After was released
	nextID    uint64
	// Skipped counts inject decisions dropped because their op was not
	// offered when they were due.
	Skipped int
	// Late counts injected faults made due by their Loose anchor and the
	// clock (Clock), their After not having come.
	Late int
	// looseN counts the released ops by looseBase: a loose key (LooseAnchor)
	// has come when its base's count passed its N. clocked are the inject
	// decisions dueByClock may make due (a Loose anchor and a VTime), so
	// that it need not walk every decision at every choice.
	looseN  map[Key]int
	clocked []int
	// made are the ops Extra made up, by ID, each for its decision.
	made map[uint64]*Decision
	// track is the run the decisions were read from, its ops in the order
	// released (Follow); pos the next of them, while every op released so
	// far was theirs (off: no more).
	track []Op
	pos   int
	off   bool
	// Order is the keys of the ops released, in order (Auto ones not
	// included).
	Order []Key
	// recalled is the recorded op of the decision the last Next took
	// (nil: the default order chose).
	recalled *Op
	// Then, when set, chooses where no decision does, in place of the
	// default order, among the traced ops not held (the delays and
	// faults are the decisions'); it is reset with Seed, and the engine
	// draws from Seed from the first decision on (Forker). Explain's
	// chance runs force the trace's faults and delays alone and leave
	// the order to the campaign's strategy this way.
	Then   Strategy
	Seed   int64
	fork   func(seed int64)
	forked bool
}

// OnFork is told the engine's fork (Forker): a run with Then forks at its
// first decision, so that what the engine still draws (the delay it
// offers in a lull, the faults Forced declines) follows the seed, as a
// branch's does, and the run's record says so.
func (f *Forced) OnFork(fork func(seed int64)) { f.fork = fork }

// Recaller is a strategy that forces recorded decisions (Replay, Forced).
// The engine asks it what the trace recorded of the op it just chose: a
// probe-aimed fault is aimed with the recorded answer, never by running
// the probe again.
type Recaller interface {
	// Recalled is the recorded op the last Next chose; nil when the
	// choice was the strategy's own.
	Recalled() *Op
}

// Recalled is the recorded op of the decision the last Next took
// (Recaller).
func (f *Forced) Recalled() *Op { return f.recalled }

// NewForced forces the given decisions; fr says which fault ops it may
// make up (Extra), which are recoveries, and which keep their recorded
// draws.
func NewForced(ds []Decision, fr FaultReplays) *Forced { return &Forced{decisions: ds, faults: fr} }

// Follow gives the run the decisions were read from (its records): while
// a forced run releases that run's ops in its order, it settles again
// where that run's replay did, while the next of them is not offered yet
// (Awaiter). The default order takes the oldest op by the number the
// tracer gave it when it appeared, and a thread that reaches its next
// call only after another settling (a Go server's runtime thread woken by
// another) appears later and is numbered otherwise: without this, a run
// of all the decisions of a replayable trace may part from it where the
// trace made no decision (examples/nats/README.md, "explain on a loss").
func (f *Forced) Follow(recs []Record) {
	f.track = f.track[:0]
	for _, r := range recs {
		if !r.Auto {
			f.track = append(f.track, r.Op)
		}
	}
}

// tracks says whether o, released, is want, an op of the followed run.
func tracks(o, want *Op) bool {
	switch {
	case want.Kind == Advance:
		return o.Kind == Advance && o.At == want.At
	case want.Kind.IsFault():
		return o.Kind == want.Kind && o.Node == want.Node
	}
	return standsFor(o, want)
}

// Done is false: a forced run ends when the run does (Awaiter).
func (f *Forced) Done() bool { return false }

// Ready reports whether the next op of the followed run is offered, while
// the forced run is following it; an advance or a fault is never waited
// for (the forced run makes its own, or none) (Awaiter).
func (f *Forced) Ready(enabled []*Op) bool {
	if f.off || f.pos >= len(f.track) {
		return true
	}
	want := &f.track[f.pos]
	if want.Kind == Advance || want.Kind.IsFault() {
		return true
	}
	for _, o := range enabled {
		if tracks(o, want) {
			return true
		}
	}
	return false
}

// twin is, while the forced run follows a run, that run's next op where
// the default's choice (enabled[pick]) is another op of the same key: two
// threads of a process polling from one call site (a Go server's runtime
// threads) have one key, and the default takes the older, where the
// followed run may have released the other (no decision, as their key is
// the same). -1 when there is no such op.
func (f *Forced) twin(enabled []*Op, pick int) int {
	if f.off || f.pos >= len(f.track) || same(enabled[pick], &f.track[f.pos]) {
		return -1
	}
	k := f.keyer.Key(enabled[pick])
	for j, o := range enabled {
		if j != pick && same(o, &f.track[f.pos]) && f.keyer.Key(o) == k {
			return j
		}
	}
	return -1
}

// follow moves along the followed run when o, just released, is its next
// op, and leaves it for good otherwise.
func (f *Forced) follow(o *Op) {
	if f.off || f.pos >= len(f.track) {
		return
	}
	if tracks(o, &f.track[f.pos]) {
		f.pos++
	} else {
		f.off = true
	}
}

func (f *Forced) Name() string { return "forced" }

func (f *Forced) Reset(_ int64, hint int) {
	f.keyer = NewKeyer(f.named()...)
	f.done = map[Key]bool{}
	f.injected = make([]bool, len(f.decisions))
	f.due = make([]bool, len(f.decisions))
	f.nextID = extraIDBase
	f.Skipped, f.Late = 0, 0
	f.looseN, f.clocked = map[Key]int{}, f.clocked[:0]
	f.made = map[uint64]*Decision{}
	for i, d := range f.decisions {
		if d.Kind == InjectDecision && d.VTime != nil && (d.Loose != nil || d.Timed) {
			f.clocked = append(f.clocked, i)
		}
	}
	f.pos, f.off = 0, false
	f.Order = nil
	f.recalled = nil
	f.forked = false
	if f.Then != nil {
		f.Then.Reset(f.Seed, hint)
	}
	f.update()
}

// named are the keys the decisions name: a run names its ops by their
// thread where the trace they come from did (Keyer).
func (f *Forced) named() []Key {
	var out []Key
	for _, d := range f.decisions {
		out = append(out, d.Key)
		if d.After != nil {
			out = append(out, *d.After)
		}
	}
	return out
}

// update marks the inject decisions whose After has been released (a
// Timed one's is its time: dueByClock).
func (f *Forced) update() {
	for i, d := range f.decisions {
		if d.Kind == InjectDecision && !d.Timed && !f.injected[i] && (d.After == nil || f.done[*d.After]) {
			f.due[i] = true
		}
	}
}

// Clock makes due the faults the clock has made due (Clocked).
func (f *Forced) Clock(now time.Duration) { f.dueByClock(now) }

// dueByClock makes due the injected faults whose After has not been
// released though their Loose anchor has and the clock has reached the
// time the trace made them at. A subset of the decisions may move the
// workload off the connection a fault was anchored on (a route two servers
// opened to each other, kept on the other's this time): without this the
// fault would never come, and the decision that moved its anchor would
// look needed for the failure. Both, so that a fault still follows the
// workload where the workload comes late (package explain's anchors). A
// run that follows the trace is unchanged: there Loose is After itself.
// At the time, not after it: a fault the engine offers in a lull at its
// trigger is taken there, as the replay of the run's trace takes it. A
// Timed fault is due at its time alone.
func (f *Forced) dueByClock(now time.Duration) {
	for _, i := range f.clocked {
		d := &f.decisions[i]
		if f.due[i] || f.injected[i] || now < time.Duration(*d.VTime) {
			continue
		}
		switch {
		case d.Timed:
			f.due[i] = true
		case f.looseN[looseBase(*d.Loose)] > d.Loose.N:
			f.due[i] = true
			f.Late++
		}
	}
}

// matches says whether an offered op is an injected decision's: the same
// process, kind and object (an earlier injection skipped would change its
// position) and the same target or parameters.
func (f *Forced) matches(d *Decision, o *Op) bool {
	if m, ok := f.made[o.ID]; ok {
		// Made up for its decision (Extra): a probe-aimed one has its
		// node already, and is no offer for the probe to aim.
		return m == d
	}
	if k := f.keyer.Key(o); k.Process != d.Key.Process || k.Kind != d.Key.Kind || k.Object != d.Key.Object {
		return false
	}
	switch {
	case o.Kind == Advance:
		return o.At == d.Op.At
	case o.Kind.IsFault() && d.Op.ProbeAimed():
		// Offered with no target: the probe's recorded answer aims it
		// when it is chosen (Recalled).
		return o.Object == ProbeObject && o.Node == ""
	case o.Kind.IsFault():
		return o.Node == d.Op.Node && o.Delay == d.Op.Delay && o.Object == d.Op.Object
	}
	return true
}

// Extra makes the due injected ops that are not offered: an advance to the
// recorded time, while it lies ahead, and a fault its kind lets a replay
// remake (FaultReplay.Remake: a crash, a pause, a cut, a hold...) with the
// recorded parameters, a probe-aimed one where the probe had aimed it.
// Other faults need what only the engine knows is there (a connection to
// reset, a datagram, a node down with files): they are taken only as
// offered.
func (f *Forced) Extra(now time.Duration, choices []*Op) []*Op {
	f.dueByClock(now) // the engine said it already (Clock); a caller may not
	var out []*Op
	for i := range f.decisions {
		d := &f.decisions[i]
		if !f.due[i] || f.injected[i] {
			continue
		}
		offered := false
		for _, o := range choices {
			if f.matches(d, o) {
				offered = true
				break
			}
		}
		if offered {
			continue
		}
		switch {
		case d.Op.Kind == Advance:
			if time.Duration(d.Op.At) <= now {
				continue
			}
		case !f.faults.of(d.Op.Kind).Remake && !d.Op.Made():
			continue
		}
		o := d.Op
		f.nextID++
		o.ID = f.nextID
		if o.Kind == Advance {
			o.Delay = o.At - int64(now)
		}
		if o.Kind.IsFault() {
			o.At = 0 // a fault op has none (a pause's end once was there)
		}
		f.made[o.ID] = d
		out = append(out, &o)
	}
	return out
}

func (f *Forced) Next(enabled []*Op) (int, error) {
	for _, o := range enabled {
		f.keyer.Offer(o)
	}
	pick := -1
	var taken *Decision // the injected decision picked, if one is
	// A due injection first, in the trace's order.
	for i := range f.decisions {
		if !f.due[i] || f.injected[i] {
			continue
		}
		d := &f.decisions[i]
		for j, o := range enabled {
			if f.matches(d, o) {
				pick = j
				break
			}
		}
		f.injected[i] = true // taken now, or skipped
		if pick >= 0 {
			taken = d
			break
		}
		f.Skipped++
	}
	if f.Then != nil && !f.forked {
		f.forked = true
		if f.fork != nil {
			f.fork(f.Seed)
		}
	}
	if pick < 0 && f.Then != nil {
		var err error
		if pick, err = f.chance(enabled); err != nil {
			return 0, err
		}
	}
	if pick < 0 {
		// The oldest op not held, else the oldest op.
		first := -1
		for j, o := range enabled {
			if o.Kind == Advance || o.Kind.IsFault() {
				continue
			}
			if first < 0 {
				first = j
			}
			if !f.held(o) {
				pick = j
				break
			}
		}
		if pick < 0 {
			pick = first
		}
		if pick < 0 {
			pick = idle(enabled, f.faults)
		}
		if pick < 0 {
			return 0, fmt.Errorf("forced: no traced op among %d choices", len(enabled))
		}
		if j := f.twin(enabled, pick); j >= 0 {
			pick = j
		}
	}
	f.recalled = nil
	if taken != nil {
		f.recalled = &taken.Op
	}
	if taken != nil && f.faults.of(taken.Op.Kind).KeepDraw {
		// A storage fault the engine offers draws its variant and its
		// pick afresh; the trace's are what the failure needs.
		enabled[pick].KeepDraw(&taken.Op)
	}
	f.follow(enabled[pick])
	k := f.keyer.Released(enabled[pick])
	f.done[k] = true
	f.looseN[looseBase(k)]++
	f.Order = append(f.Order, k)
	f.update()
	return pick, nil
}

// chance is Then's choice among the traced ops enabled that no decision
// keeps back, -1 when there is none.
func (f *Forced) chance(enabled []*Op) (int, error) {
	var cands []*Op
	var at []int
	for j, o := range enabled {
		if o.Kind == Advance || o.Kind.IsFault() || f.held(o) {
			continue
		}
		cands = append(cands, o)
		at = append(at, j)
	}
	if len(cands) == 0 {
		return -1, nil
	}
	k, err := f.Then.Next(cands)
	if err != nil {
		return 0, fmt.Errorf("forced, then %s: %w", f.Then.Name(), err)
	}
	return at[k], nil
}

// idle is the default's choice when no traced op can run (every thread
// waits on a timer, a node is down): an advance, as Oldest takes one (its
// ID is below a fault op's) and as the clock would move anyway, else a
// recovery (a restart, a heal) the engine offers; -1 if neither.
func idle(enabled []*Op, fr FaultReplays) int {
	for _, pass := range []func(k Kind) bool{
		func(k Kind) bool { return k == Advance },
		func(k Kind) bool { return fr.of(k).Recovery },
	} {
		for j, o := range enabled {
			if pass(o.Kind) {
				return j
			}
		}
	}
	return -1
}

// Decliner is a strategy that may decline the fault op the engine offers
// alone in a lull (a spread injection whose trigger the clock reached,
// with no op to run beside it): the engine then waits for the next wake
// instead. Forced declines every fault it was not told to inject: the
// default order injects none of its own.
type Decliner interface {
	Declines(o *Op) bool
}

// Declines says whether o is no due injected decision's.
func (f *Forced) Declines(o *Op) bool {
	for i := range f.decisions {
		if f.due[i] && !f.injected[i] && f.matches(&f.decisions[i], o) {
			return false
		}
	}
	return true
}

// held says whether a hold decision keeps o back now.
func (f *Forced) held(o *Op) bool {
	k := f.keyer.Key(o)
	for i := range f.decisions {
		d := &f.decisions[i]
		if d.Kind == HoldDecision && d.Key == k && d.After != nil && !f.done[*d.After] {
			return true
		}
	}
	return false
}

// Extra makes the replay's next recorded op when it is an advance or a
// fault the engine did not offer: a minimized trace (explain) holds
// advances and faults that Forced made up, which the engine's own offers,
// drawn from the seed, need not hold. As Forced.Extra, it makes only
// advances still ahead and the faults their kinds let it remake.
func (r *Replay) Extra(now time.Duration, choices []*Op) []*Op {
	i := r.step
	for i < len(r.records) && r.records[i].Auto {
		i++
	}
	if i >= len(r.records) {
		return nil
	}
	want := r.records[i].Op
	switch {
	case want.Kind == Advance:
		if time.Duration(want.At) <= now {
			return nil
		}
		want.Delay = want.At - int64(now)
	case !r.faults.of(want.Kind).Remake && !want.Made():
		return nil
	}
	for _, o := range choices {
		if same(o, &want) && sameDraw(o, &want) {
			return nil
		}
	}
	return []*Op{&want}
}
