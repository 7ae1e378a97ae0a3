package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// Params configure New.
type Params struct {
	// PCTDepth is PCT's bug depth d (d-1 change points); 0 means 3.
	PCTDepth int
	// Predictor supplies conflict predictions to "+" variants.
	Predictor Predictor
	// Mode selects how a "+" variant uses predictions.
	Mode PlusMode
}

// PlusMode says how a "+" variant treats ops predicted not to conflict.
type PlusMode struct {
	// Weight, when > 0, selects Morpheus's softer mode for POS-family
	// strategies: possibly conflicting ops draw priority 1-U^(1/Weight)
	// (biased low) instead of non-conflicting ones skipping the scheduler.
	Weight float64
}

// Names are the strategies New accepts (each also with a "+" suffix).
var Names = []string{"random", "pct", "pos", "pos*"}

// New makes a strategy by name: random (alias rw), pct, pos, pos*, each
// optionally with "+" for conflict analysis.
func New(name string, p Params) (Strategy, error) {
	base, plus := strings.CutSuffix(name, "+")
	var s Strategy
	switch base {
	case "random", "rw":
		s = &Random{}
	case "pct":
		d := p.PCTDepth
		if d <= 0 {
			d = 3
		}
		s = &PCT{Depth: d}
	case "pos":
		s = &POS{}
	case "pos*":
		s = &POS{Redraw: true}
	default:
		return nil, fmt.Errorf("unknown strategy %q (want one of random, pct, pos, pos*, with optional +)", name)
	}
	if !plus {
		return s, nil
	}
	return NewPlus(s, p.Predictor, p.Mode), nil
}

func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x6c6f636b73746570)) // "lockstep"
}

// Random releases a uniformly chosen enabled op.
type Random struct{ r *rand.Rand }

func (s *Random) Name() string                    { return "random" }
func (s *Random) Reset(seed int64, _ int)         { s.r = newRand(seed) }
func (s *Random) Next(enabled []*Op) (int, error) { return s.r.IntN(len(enabled)), nil }

// POS is partial order sampling: every op gets an independent uniform
// priority when it first appears, and the highest enabled op runs. Because
// the relative order of a few ops depends only on their own priorities, a
// bug needing op B after op A and A's k predecessors is hit with probability
// about 1/(k+2) however many unrelated ops surround them.
//
// With Redraw (POS*), after an op runs the priorities of the pending ops
// that race with it (same non-empty Object) are drawn again.
type POS struct {
	Redraw bool
	r      *rand.Rand
	prio   map[uint64]float64
	objs   map[uint64]string
	// lowFor, when set by a "+" variant in weight mode, says an op should
	// draw a priority biased towards low values.
	weight func(*Op) float64
}

func (s *POS) Name() string {
	if s.Redraw {
		return "pos*"
	}
	return "pos"
}

func (s *POS) Reset(seed int64, _ int) {
	s.r = newRand(seed)
	s.prio = map[uint64]float64{}
	s.objs = map[uint64]string{}
}

func (s *POS) draw(o *Op) float64 {
	u := s.r.Float64()
	if s.weight != nil {
		if w := s.weight(o); w > 0 {
			return 1 - math.Pow(u, 1/w)
		}
	}
	return u
}

// Ranks reports whether priorities stay until their op runs (Ranker):
// not under POS*, which draws them again.
func (s *POS) Ranks() bool { return !s.Redraw }

// Rank is o's priority, drawn when o is first seen (Ranker).
func (s *POS) Rank(o *Op) float64 {
	p, ok := s.prio[o.ID]
	if !ok {
		p = s.draw(o)
		s.prio[o.ID] = p
		s.objs[o.ID] = o.Object
	}
	return p
}

// Forget drops o's priority: o ran without Next (Ranker).
func (s *POS) Forget(o *Op) {
	delete(s.prio, o.ID)
	delete(s.objs, o.ID)
}

func (s *POS) Next(enabled []*Op) (int, error) {
	best, bestP := 0, -1.0
	for i, o := range enabled {
		p := s.Rank(o)
		if p > bestP {
			best, bestP = i, p
		}
	}
	x := enabled[best]
	delete(s.prio, x.ID)
	delete(s.objs, x.ID)
	if s.Redraw && x.Object != "" {
		// Redraw in ID order so the outcome does not depend on map order.
		var ids []uint64
		for id, obj := range s.objs {
			if obj == x.Object {
				ids = append(ids, id)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			s.prio[id] = s.r.Float64()
		}
	}
	return best, nil
}

// PCT is probabilistic concurrency testing (Burckhardt et al.) over chains,
// as PCTCP does for distributed systems (see Op.Chain): each chain gets a
// random priority when its first op appears (a uniform draw, which puts it
// at a uniformly random place among the chains seen so far), the
// highest-priority chain with an enabled op runs its oldest enabled op, and
// at d-1 distinct random steps the chain about to run drops below every
// other chain, later drops below earlier ones. Chains that appear after a
// drop still rank above the dropped ones, as in PCT, where the d-1 lowest
// priorities are reserved for the change points.
type PCT struct {
	// Depth is the bug depth d: d-1 priority change points.
	Depth int
	r     *rand.Rand
	// prio holds each chain's priority: a draw in [0, 1), or -k for the
	// chain dropped at the k-th change point.
	prio map[string]float64
	// chainOf caches Op.Chain by op ID: an op stays enabled for many
	// steps, and its chain name is built from strings.
	chainOf map[uint64]string
	chains  []string // Next's scratch: the chain of each enabled op
	changes map[int]bool
	drops   int
	step    int
}

func (s *PCT) Name() string { return "pct" }

func (s *PCT) Reset(seed int64, stepsHint int) {
	s.r = newRand(seed)
	s.prio = map[string]float64{}
	s.chainOf = map[uint64]string{}
	s.step, s.drops = 0, 0
	if stepsHint <= 0 {
		stepsHint = 1000
	}
	// d-1 distinct steps in [1, stepsHint]: a repeated step would silently
	// lower the depth.
	s.changes = map[int]bool{}
	for len(s.changes) < min(s.Depth-1, stepsHint) {
		s.changes[1+s.r.IntN(stepsHint)] = true
	}
}

// highest returns the index of the op that runs, given the chains of the
// enabled ops: the first, so the oldest (enabled is sorted by ID), op of the
// highest-priority chain.
func (s *PCT) highest(chains []string) int {
	best, bestP := -1, 0.0
	for i, c := range chains {
		if p := s.prio[c]; best < 0 || p > bestP {
			best, bestP = i, p
		}
	}
	return best
}

func (s *PCT) Next(enabled []*Op) (int, error) {
	s.step++
	// New chains draw their priority in ID order, so that the draws, and
	// the schedule, depend only on the seed and the enabled sets.
	chains := s.chains[:0]
	for _, o := range enabled {
		c, ok := s.chainOf[o.ID]
		if !ok {
			c = o.Chain()
			s.chainOf[o.ID] = c
		}
		chains = append(chains, c)
		if _, ok := s.prio[c]; !ok {
			s.prio[c] = s.r.Float64()
		}
	}
	s.chains = chains
	best := s.highest(chains)
	if s.changes[s.step] {
		// The chain about to run drops to the lowest priority; the highest
		// remaining enabled one runs instead (the same chain if it is the
		// only one enabled).
		s.drops++
		s.prio[chains[best]] = -float64(s.drops)
		best = s.highest(chains)
	}
	// A released op never comes back; its ID is not reused in a trial.
	delete(s.chainOf, enabled[best].ID)
	return best, nil
}

// Plus is the conflict-analysis "+" variant of a strategy (Morpheus): an
// op whose signature was seen in earlier trials and never took part in a
// conflict is released at once, without consulting the inner strategy.
// While a fault or a delay is on offer (contended), it is released at once
// only where the inner strategy ranks it (Ranker) above every fault and
// delay on offer, so that it would have come before them anyway; with an
// inner strategy that does not rank, the inner strategy decides every op
// then. Ops never seen count as possibly conflicting.
type Plus struct {
	inner     Strategy
	pred      Predictor
	mode      PlusMode
	immediate bool
	// may caches each offered op's prediction: an op is offered at many
	// steps before it is released, and its signature does not change.
	may map[uint64]bool
	// With a Counter: each offered op's Nth, and how many ops of each
	// count key the trial offered so far.
	nth    map[uint64]int
	counts map[string]int
}

// NewPlus wraps inner. A nil predictor predicts that everything may
// conflict, which makes Plus behave exactly like inner.
func NewPlus(inner Strategy, pred Predictor, mode PlusMode) *Plus {
	p := &Plus{inner: inner, pred: pred, mode: mode}
	if pos, ok := inner.(*POS); ok && mode.Weight > 0 {
		pos.weight = func(o *Op) float64 {
			if p.mayConflict(o) {
				return mode.Weight
			}
			return 0
		}
	}
	return p
}

func (p *Plus) Name() string { return p.inner.Name() + "+" }

func (p *Plus) Reset(seed int64, stepsHint int) {
	p.inner.Reset(seed, stepsHint)
	p.immediate = false
	clear(p.may)
	clear(p.nth)
	clear(p.counts)
}

// Number sets each offered op's Nth, counting in the order ops are first
// offered (enabled is in ID order), so that the trial's records carry
// the count the prediction used and the analysis keys them alike
// (Numberer). An op keeps the number it got when first offered.
func (p *Plus) Number(enabled []*Op) {
	c, ok := p.pred.(Counter)
	if !ok || !c.Counts() {
		return
	}
	if p.nth == nil {
		p.nth, p.counts = map[uint64]int{}, map[string]int{}
	}
	for _, o := range enabled {
		if o.Kind == Advance || o.Kind.IsFault() {
			continue
		}
		n, seen := p.nth[o.ID]
		if !seen {
			k := c.CountKey(o.Signature())
			n = p.counts[k]
			p.counts[k] = n + 1
			p.nth[o.ID] = n
		}
		o.Nth = n
	}
}

// mayConflict: an advance or fault op races by definition with every op
// it holds or cuts off, so it is never released at once.
func (p *Plus) mayConflict(o *Op) bool {
	if p.pred == nil || o.Kind == Advance || o.Kind.IsFault() {
		return true
	}
	may, ok := p.may[o.ID]
	if !ok {
		if p.may == nil {
			p.may = map[uint64]bool{}
		}
		may = p.pred.MayConflict(o.Signature())
		p.may[o.ID] = may
	}
	return may
}

// LastImmediate reports whether the last Next released an op at once.
func (p *Plus) LastImmediate() bool { return p.immediate }

func (p *Plus) Next(enabled []*Op) (int, error) {
	p.Number(enabled)
	if p.mode.Weight <= 0 || !p.isPOS() {
		if i := p.atOnce(enabled); i >= 0 {
			p.immediate = true
			return i, nil
		}
	}
	p.immediate = false
	return p.inner.Next(enabled)
}

// atOnce returns the index of the op to release at once, or -1 when the
// inner strategy must decide.
func (p *Plus) atOnce(enabled []*Op) int {
	if !contended(enabled) {
		for i, o := range enabled {
			if !p.mayConflict(o) {
				return i
			}
		}
		return -1
	}
	r, ok := p.inner.(Ranker)
	if !ok || !r.Ranks() {
		return -1
	}
	// Rank every op in enabled's order, as the inner strategy's own Next
	// would draw, so that the draws depend only on the seed and the sets.
	bar := math.Inf(-1)
	for _, o := range enabled {
		if k := r.Rank(o); (o.Kind == Advance || o.Kind.IsFault()) && k > bar {
			bar = k
		}
	}
	for i, o := range enabled {
		if !p.mayConflict(o) && r.Rank(o) > bar {
			r.Forget(o)
			return i
		}
	}
	return -1
}

// Ranker is a strategy whose choice is the enabled op it ranks highest.
// Plus uses it to release ops at once beside a fault or a delay without
// moving them past it.
type Ranker interface {
	// Ranks reports whether an op's rank stays the same while it waits,
	// so that an op ranked above another runs before it.
	Ranks() bool
	// Rank is o's rank, drawn when o is first seen as Next would draw it.
	Rank(o *Op) float64
	// Forget drops o, released without Next.
	Forget(o *Op)
}

// contended reports whether a fault or a delay is on offer. Each races
// with every op beside it: released at once regardless, an op that never
// conflicts with other ops would be decided to come before the crash, the
// cut or the clock's move, and what follows it (the message it sends, say)
// would get a head start the inner strategy would not have given it.
// (Measured on gproc-1, where the bug needs a failure report sent late,
// after a restart: POS 62/300, releasing at once regardless 19/300,
// holding off while a fault is on offer 53/300, while a fault or a delay
// is 69/300.)
func contended(enabled []*Op) bool {
	for _, o := range enabled {
		if o.Kind.IsFault() || o.Kind == Advance {
			return true
		}
	}
	return false
}

func (p *Plus) isPOS() bool { _, ok := p.inner.(*POS); return ok }

// Replay forces the decisions of a recorded trace.
type Replay struct {
	records  []Record
	fallback Strategy
	faults   FaultReplays
	step     int
	// recalled is the record the last Next matched (nil: the fallback
	// chose).
	recalled *Op
	// Moved counts the decisions matched on another thread of the recorded
	// op's process (see SameOnProcess).
	Moved int
	// Resited counts the decisions matched on the recorded op made from
	// another call site (see Resited).
	Resited int
	// Backoffs counts a runtime's back-offs (Op.RuntimeBackoff) the
	// recorded run made and this one did not, or the other way round.
	Backoffs int
	// Resized counts the decisions matched on the recorded op carrying
	// another byte count (see Resized); FirstResized names the first.
	Resized      int
	FirstResized string
	// extras counts the back-offs released in a row that the recorded run
	// did not make (maxExtraBackoffs).
	extras int
	fork   func(seed int64)
	// now is the virtual time of the decision at hand, once the engine
	// has told it (clocked; Clocked).
	now     time.Duration
	clocked bool
}

// Clock is told the virtual time of each decision (Clocked): a fault the
// recorded run took later than a lull offers it was declined there.
func (r *Replay) Clock(now time.Duration) { r.now, r.clocked = now, true }

// OnFork is told the engine's fork (Forker): a replay forks at the
// decision its trace's Fork record marks, as the recorded run did.
func (r *Replay) OnFork(fork func(seed int64)) { r.fork = fork }

// NewReplay replays tr; once the records run out it asks fallback, or fails
// when fallback is nil. fr says which fault ops it may make up (Extra).
func NewReplay(tr *Trace, fallback Strategy, fr FaultReplays) *Replay {
	return &Replay{records: tr.Records, fallback: fallback, faults: fr}
}

func (r *Replay) Name() string { return "replay" }

// Records are the decisions the replay forces.
func (r *Replay) Records() []Record { return r.records }

// Done reports whether every recorded decision has been made (a
// runtime's back-off aside).
func (r *Replay) Done() bool {
	for i := r.step; i < len(r.records); i++ {
		if !r.records[i].Auto && !r.records[i].Op.RuntimeBackoff() {
			return false
		}
	}
	return true
}

// Owes says whether the trace has a decision left, a back-off aside, and
// whether it is among enabled (Ender).
func (r *Replay) Owes(enabled []*Op) (left, here bool) {
	i := r.unmade(r.step, true)
	if i >= len(r.records) {
		return false, false
	}
	return true, offered(&r.records[i].Op, enabled)
}

// Recalled is the recorded op the last Next chose (Recaller); nil when
// the records had run out.
func (r *Replay) Recalled() *Op { return r.recalled }

func (r *Replay) Reset(seed int64, stepsHint int) {
	r.step = 0
	r.recalled = nil
	r.Moved, r.Resited, r.Backoffs, r.extras = 0, 0, 0, 0
	r.Resized, r.FirstResized = 0, ""
	r.now, r.clocked = 0, false
	if r.fallback != nil {
		r.fallback.Reset(seed, stepsHint)
	}
}

// same says whether an enabled op is the recorded one. IDs are
// deterministic, but identity is checked on what a run cannot change by
// accident: the thread, what it does, where from and on what.
func same(a *Op, b *Op) bool { return Differs(a, b, false) == "" }

// Declines says whether o, a fault the engine offers alone in a lull, is
// of another kind than the trace's next decision (Decliner). Taken there,
// an injection whose trigger came (a step-triggered crash of a minimized
// trace, whose steps run otherwise than the draw's trial) would stand
// where the trace has the sleep that the clock's next jump ends;
// declined, the engine moves the clock instead, as the recorded run did.
// A fault of the next decision's kind is kept whatever it carries: what
// a fault settles only when it strikes or is aimed (a stall's syscall, a
// probe's target) is not in the offer, and the replay takes the offer or
// makes the recorded op up (Extra). One of that kind is declined too while
// the clock is short of the time the trace took it at: the recorded run
// declined it in this lull (explain's fault due at its time, a branch's
// late injection) and the clock moved on to the next wake first.
func (r *Replay) Declines(o *Op) bool {
	i := r.step
	for i < len(r.records) && r.records[i].Auto {
		i++
	}
	if i >= len(r.records) || r.records[i].Op.Kind != o.Kind || r.records[i].Op.LPID != o.LPID {
		return true
	}
	return r.clocked && time.Duration(r.records[i].VTime) > r.now
}

// Ready reports whether the next recorded decision can be made among
// enabled (or the records have run out): a replay that finds its op
// missing may settle again before it calls the run diverged. A recorded
// back-off not made yet is passed over at once while the next recorded op
// that is not one is offered; otherwise it is waited for as any op is,
// unless its thread waits at another op: the next op may wait on it (an
// Erlang VM's scheduler resumes once its aux thread has polled).
func (r *Replay) Ready(enabled []*Op) bool {
	i := r.unmade(r.step, false)
	if i >= len(r.records) {
		return true
	}
	want := &r.records[i].Op
	if offered(want, enabled) {
		return true
	}
	if !want.RuntimeBackoff() {
		// One this run makes and the recorded run did not (Next).
		return slices.ContainsFunc(enabled, (*Op).RuntimeBackoff)
	}
	if slices.ContainsFunc(enabled, func(o *Op) bool { return o.LPID == want.LPID }) {
		return true
	}
	j := r.unmade(i+1, true)
	return j >= len(r.records) || offered(&r.records[j].Op, enabled)
}

// unmade is the index of the first record from i on that is a decision
// (not Auto) and, with noBackoffs, not a runtime's back-off.
func (r *Replay) unmade(i int, noBackoffs bool) int {
	for i < len(r.records) && (r.records[i].Auto || noBackoffs && r.records[i].Op.RuntimeBackoff()) {
		i++
	}
	return i
}

// offered says whether want is among enabled (standsFor).
func offered(want *Op, enabled []*Op) bool {
	return slices.ContainsFunc(enabled, func(o *Op) bool { return standsFor(o, want) })
}

// standsFor says whether o may be released as the recorded want: the same
// op, on another thread of its process, or from another call site of its
// thread.
func standsFor(o, want *Op) bool {
	return same(o, want) || SameOnProcess(o, want) || Resited(want, o)
}

func (r *Replay) Next(enabled []*Op) (int, error) {
	r.recalled = nil
	if r.step >= len(r.records) {
		if r.fallback != nil {
			return r.fallback.Next(enabled)
		}
		return 0, fmt.Errorf("replay: trace ended at step %d but the trial continues", r.step)
	}
	for r.step < len(r.records) && r.records[r.step].Auto {
		r.step++
	}
	if r.step >= len(r.records) {
		if r.fallback != nil {
			return r.fallback.Next(enabled)
		}
		return 0, fmt.Errorf("replay: trace ended at step %d but the trial continues", r.step)
	}
	if f := r.records[r.step].Fork; f != nil && r.fork != nil {
		r.fork(*f)
	}
	want := &r.records[r.step].Op
	r.step++
	i, err := r.find(want, enabled)
	if err != nil {
		switch j := slices.IndexFunc(enabled, (*Op).RuntimeBackoff); {
		case want.RuntimeBackoff():
			// A back-off the recorded run made and this one need not.
			r.Backoffs++
			return r.Next(enabled)
		case j >= 0 && r.extras < maxExtraBackoffs:
			// One this run makes and the recorded run did not: the
			// recorded op waits on it (a safepoint's threads wait for
			// the VM thread, a scheduler for its aux thread).
			r.step--
			r.Backoffs++
			r.extras++
			return j, nil
		}
		return 0, r.after(err)
	}
	r.extras = 0
	// What the op carries must be what was recorded too: a byte count or
	// peer that differs is another exchange under the same call, but for
	// the count of a message between Erlang VMs, which may encode the
	// same term at another length (Resized): counted.
	if d := ValuesDiffer(want, enabled[i]); d != "" {
		if !Resized(want, enabled[i], r.records[r.step-1].Data) {
			return 0, r.after(fmt.Errorf("diverged at step %d: %s (expected %s, got %s)", r.step, d, want.String(), enabled[i].String()))
		}
		r.Resized++
		if r.FirstResized == "" {
			r.FirstResized = fmt.Sprintf("step %d: %s, the trace has %d bytes", r.step, enabled[i].String(), want.Bytes)
		}
	}
	if r.faults.of(want.Kind).KeepDraw {
		// As Forced does: the engine's offer drew its variant and pick
		// afresh, and the trace's are what the run did.
		enabled[i].KeepDraw(want)
	}
	r.recalled = want
	return i, nil
}

// after adds to a divergence the first op that carried another byte
// count before it, if any: where the run may have begun to part.
func (r *Replay) after(err error) error {
	if r.FirstResized == "" {
		return err
	}
	return fmt.Errorf("%w; before it, another byte count at %s (%d in all)", err, r.FirstResized, r.Resized)
}

// maxExtraBackoffs bounds the back-offs a replay releases in a row while
// the recorded op does not come: a runtime that polls on and on while it
// waits for something the recorded run did has parted from it.
const maxExtraBackoffs = 1000

// sameDraw says whether an offered fault carries the recorded one's
// draws: its node and its size (an outage's length, a pause's), as
// Forced.matches compares them. A fault explain's forced run made up
// (Forced.Extra) may stand in a trace beside the engine's own offer of
// that kind with other draws: the replay must take the one recorded. A
// probe-aimed fault's draws are the aim's (AimDiffers checks them).
func sameDraw(o, want *Op) bool {
	if !want.Kind.IsFault() || want.ProbeAimed() {
		return true
	}
	return o.Node == want.Node && o.Delay == want.Delay
}

// sameConn says whether o is on the recorded op's connection, or either
// names none. Connections are named by their ports, which lockstep binds
// in the schedule's order, so a run that follows the trace has the same.
func sameConn(o, want *Op) bool { return o.Conn == "" || want.Conn == "" || o.Conn == want.Conn }

// find is the index of the enabled op that is the recorded one: by ID
// first, then by identity, the recorded draws and connection preferred.
func (r *Replay) find(want *Op, enabled []*Op) (int, error) {
	moved := func(o *Op) bool { return SameOnProcess(o, want) && o.LPID != want.LPID }
	for _, match := range []func(o *Op) bool{
		func(o *Op) bool { return o.ID == want.ID && same(o, want) && sameDraw(o, want) && sameConn(o, want) },
		func(o *Op) bool { return same(o, want) && sameDraw(o, want) && sameConn(o, want) },
		// On the recorded connection but another thread of the process:
		// where two of a JVM's threads were named the other way round
		// (each names the other's connection, a send to one peer
		// address), the thread of the recorded name is on the other
		// connection.
		func(o *Op) bool { return moved(o) && want.Conn != "" && o.Conn == want.Conn },
		func(o *Op) bool { return same(o, want) && sameDraw(o, want) },
		func(o *Op) bool { return same(o, want) },
		// The same op of the same process on another OS thread: Go and
		// the JVM run a goroutine's or a task's syscalls on whichever
		// thread is free.
		moved,
		// The recorded thread's next op, the same but for its call site
		// (Resited): no other op is the recorded one.
		func(o *Op) bool { return Resited(want, o) },
	} {
		for i, o := range enabled {
			if match(o) {
				if o.LPID != want.LPID {
					r.Moved++
				}
				if o.Site != want.Site {
					r.Resited++
				}
				return i, nil
			}
		}
	}
	var got []string
	for _, o := range enabled {
		got = append(got, o.String())
	}
	why := ""
	if c := closest(want, enabled); c != nil {
		why = " (closest differs in " + Differs(want, c, false) + ")"
	}
	return 0, fmt.Errorf("diverged at step %d: expected %s, got %s%s", r.step, want.String(), strings.Join(got, "; "), why)
}

// ReplayTail releases, after a replayed trace's last decision, the ops a
// process still makes on its way out (a JVM's shutdown threads): the lowest
// ID first, at most max of them. The trace's outcome then decides whether
// the replay reproduced the failure.
type ReplayTail struct {
	max, n int
}

// NewReplayTail returns a tail strategy that allows max ops.
func NewReplayTail(max int) *ReplayTail { return &ReplayTail{max: max} }

func (r *ReplayTail) Name() string                    { return "replay-tail" }
func (r *ReplayTail) Reset(seed int64, stepsHint int) { r.n = 0 }

// Len is how many ops the tail released.
func (r *ReplayTail) Len() int { return r.n }

func (r *ReplayTail) Next(enabled []*Op) (int, error) {
	if r.n >= r.max {
		return 0, fmt.Errorf("replay: the trial went on %d ops past the trace's last decision without its outcome", r.n)
	}
	r.n++
	return 0, nil
}
