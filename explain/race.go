package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// Event is one op of a race, as the minimized run released it.
type Event struct {
	Step   int    `json:"step"`
	Node   string `json:"node"`
	LPID   string `json:"lpid"`
	Thread string `json:"thread,omitempty"` // the thread's name (comm)
	Op     string `json:"op"`               // kind, with the syscall when it says more
	To     string `json:"to,omitempty"`     // a delivery's receiving process
	Peer   string `json:"peer,omitempty"`   // the remote address
	Data   string `json:"data,omitempty"`   // the message's first bytes, quoted
	Site   string `json:"site,omitempty"`   // module+0xoffset
	// Kind is the message's kind, numbered as the explained trace's
	// (`lockstep kinds TRACE`): `k12 "⟨len⟩dist LINK"`. Sentences name a
	// message by it where its bytes are not text.
	Kind string `json:"kind,omitempty"`
	// Caller is the program's own frame past a library's (see
	// sched.Op.Caller): what Func, File and Line name when set.
	Caller  string `json:"caller,omitempty"`
	Func    string `json:"func,omitempty"` // the call site symbolized, when the binary says
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Comment string `json:"comment,omitempty"` // a fault's or an advance's parameters
	// Cut says the op is not in the failing run: a fault cut it off, and
	// it is described (without a step) from the run without the fault.
	Cut bool `json:"cut,omitempty"`
}

func (ev Event) String() string {
	s := ev.LPID
	if ev.Step > 0 {
		s = fmt.Sprintf("step %d %s", ev.Step, ev.LPID)
	}
	if ev.Thread != "" {
		s += " (" + ev.Thread + ")"
	}
	s += " " + ev.Op
	if ev.To != "" {
		s += " to " + ev.To
	}
	if ev.Data != "" {
		s += " " + ev.Data
	}
	if ev.binary() {
		s += " (" + ev.Kind + ")"
	}
	if ev.Comment != "" {
		s += " " + ev.Comment
	}
	if w := ev.Where(); w != "" {
		s += " at " + w
	}
	return s
}

// Where is the call site as file:line (function), or module+offset; a
// JVM op's as File.java:line (Class.method).
func (ev Event) Where() string {
	if _, _, _, ok := symname.JavaFrame(ev.Caller); ok && ev.File == "" {
		return ev.Caller // a class that names no source file
	}
	switch {
	case ev.File != "":
		w := ev.File
		if ev.Line > 0 { // a Java frame's line may be unknown (no line table, or a compiled frame without debug information)
			w = fmt.Sprintf("%s:%d", ev.File, ev.Line)
		}
		if ev.Func != "" {
			w += " (" + ev.Func + ")"
		}
		return w
	case ev.Func != "" && ev.Caller != "":
		return ev.Func + " (" + ev.Caller + ")"
	case ev.Func != "":
		return ev.Func + " (" + ev.Site + ")"
	}
	return ev.Site
}

// Race is one decision of the minimal set, named: the pair of ops it
// ordered (First released before Second in the failing run) and whether
// the failure went away with the pair the other way round.
type Race struct {
	Decision sched.Decision `json:"decision"`
	First    Event          `json:"first"`
	Second   Event          `json:"second"`
	// Behind are, for a held delivery, the messages sent on its
	// connection before it was released, which waited behind it (a
	// connection delivers in order): they were late too.
	Behind []string `json:"behind,omitempty"`
	// For a fault, First and Before bound its window: it must come after
	// First and before Before for the failure to happen (either may be
	// missing: no bound on that side). Moved right after Before it does
	// not fail (FlipOutcome); moved right before First, EarlyOutcome.
	Before       *Event `json:"before,omitempty"`
	EarlyOutcome string `json:"early_outcome,omitempty"`
	// Effects are, for a fault, what it did while it lasted.
	Effects *Effects `json:"effects,omitempty"`
	// Storage is, for a power cut or a corruption, its draw and what
	// decided it.
	Storage *Storage `json:"storage,omitempty"`
	// Read is the recv that took First's message, when First is a
	// delivery: where the receiver acted on the message that won.
	Read *Event `json:"read,omitempty"`
	// Reversed says the pair was read off the run without the decision
	// (no pair flipped on its own): First and Second come the other way
	// round there, and it is the flip. By is then the decision's own op.
	Reversed bool   `json:"reversed,omitempty"`
	By       *Event `json:"by,omitempty"`
	// Flipped says a run with the pair reversed was tried; Confirmed that
	// the failure did not happen in it; FlipOutcome how that run ended.
	Flipped     bool   `json:"flipped"`
	Confirmed   bool   `json:"confirmed"`
	FlipOutcome string `json:"flip_outcome,omitempty"`
	// Concurrent says neither op happens before the other, as the
	// conflict analysis orders ops (conflict.HappensBefore: program order,
	// the trace's causes, eBPF-matched deliveries, FIFO per connection):
	// only the schedule ordered them.
	Concurrent bool `json:"concurrent"`
	// Pending says Second was offered, waiting, when First was released:
	// the two raced (a message "still in flight at" First, an op a delay
	// held back). A pair read otherwise (an op that only came after First,
	// maybe because of it) is not said to race.
	Pending bool `json:"pending,omitempty"`
	// SendReady says Second is a message whose send was offered when
	// First was released, the message itself not yet sent: a timeout that
	// came before a server's answer it was ready to send.
	SendReady bool `json:"send_ready,omitempty"`
	// Reorders is, for a delay whose own flip undid the failure, the
	// first pair into one inbox it reversed (the run without it has them
	// the other way round and ends Without).
	Reorders *Pair `json:"reorders,omitempty"`
	// Note says what could not be done for this race.
	Note string `json:"note,omitempty"`
	// Partial says the budget ran out while naming it: a fault's window
	// is known only on the sides searched (Note says which).
	Partial bool `json:"partial,omitempty"`
	// Summary is one sentence for humans.
	Summary string `json:"summary"`
	// Steps are the minimized run's steps of the pair, for highlights.
	Steps [2]int `json:"steps"`
}

// candidate is a pair a decision may have ordered, and the decisions
// that reverse it.
type candidate struct {
	first, second int // record indices; second -1 for an op held to the end
	flip          []sched.Decision
	// pending says the later op of the pair was offered when the earlier
	// was released (Race.Pending).
	pending bool
	// likely ranks the pairs people name a race by, tried first (the
	// higher first, 0 not): two messages into one inbox or two ops of a
	// kind on one object (2), a message and the poll or read that saw it
	// (1); a message a timeout did not wait for (2).
	likely int
	// sendReady says the later op is a message whose send was offered
	// when the earlier was released (Race.SendReady).
	sendReady bool
}

// failingRun is the minimized run as naming reads it: its records and
// their keys, the ops offered at each of its decisions, and
// happens-before over it.
type failingRun struct {
	recs   []sched.Record
	keys   []sched.Key
	offers offers
	// choices are the ops offered at each decision, as a Recorder kept
	// them (for the ID of an op held to the end).
	choices [][]sched.Op
	past    *causality
}

func newFailingRun(recs []sched.Record, choices [][]sched.Op) *failingRun {
	return &failingRun{recs: recs, keys: sched.Keys(recs, choices), offers: newOffers(recs, choices), choices: choices, past: newCausality(recs)}
}

// races says whether records a and b race: they conflict (the same
// object, concurrent), or a is a send whose message is delivered to b's
// object, which is the race of that message with b one op earlier (a
// poll held until the message it would have missed was sent).
func races(run *failingRun, a, b int) bool {
	if run.past.conflict(a, b) {
		return true
	}
	o := &run.recs[a].Op
	if o.Kind != sched.Send || run.recs[b].Op.Object == "" {
		return false
	}
	for j := a + 1; j < len(run.recs); j++ {
		if r := &run.recs[j]; r.Op.Kind == sched.Deliver && slices.Contains(r.Causes, o.ID) {
			return r.Op.Object == run.recs[b].Op.Object
		}
	}
	return false
}

// program says whether an op is a program's (not a delay or a fault,
// which race with any op by time, not by object).
func program(o *sched.Op) bool { return o.Kind != sched.Advance && !o.Kind.IsFault() }

// waiterInbox is the inbox of the thread an advance at record a timed
// out: its next op on an inbox, else its last before. "" if none.
func waiterInbox(recs []sched.Record, a int) string {
	adv := &recs[a].Op
	for j := a + 1; j < len(recs); j++ {
		if o := &recs[j].Op; o.LPID == adv.LPID && strings.HasPrefix(o.Object, "inbox:") {
			return o.Object
		}
	}
	for j := a - 1; j >= 0; j-- {
		if o := &recs[j].Op; o.LPID == adv.LPID && strings.HasPrefix(o.Object, "inbox:") {
			return o.Object
		}
	}
	return ""
}

// maxFlips bounds the likely pairs tried first, and the pairs of a fault
// with no window.
const maxFlips = 3

// name names each decision of min in the minimized run: a fault by its
// window, else, of the pairs it may have ordered, the first whose flip
// makes the failure go away, else the pair the run without it has the
// other way round.
func (e *explainer) name(ctx context.Context, min []sched.Decision, run *failingRun, sp *spec.Spec, syms *symbolizer) ([]Race, error) {
	var out []Race
	var spent error
	for i := range min {
		r, err := e.nameOne(ctx, i, min, run, sp, syms)
		if r.Summary != "" {
			out = append(out, r)
		}
		switch {
		case errors.Is(err, errBudget):
			// Every decision kept is still named, by what needs no run
			// (each further run fails at once).
			spent = err
		case err != nil:
			return out, err
		}
	}
	return out, spent
}

// nameOne names decision i of min.
func (e *explainer) nameOne(ctx context.Context, i int, min []sched.Decision, run *failingRun, sp *spec.Spec, syms *symbolizer) (Race, error) {
	d := min[i]
	at := findDecision(d, run.recs, run.keys)
	if at < 0 && d.Kind != sched.HoldDecision {
		return Race{Decision: d, Summary: fmt.Sprintf("%v: its op did not run in the minimized run", d)}, nil
	}
	r := Race{Decision: d}
	if d.Kind == sched.InjectDecision && d.Op.Kind.IsFault() && at >= 0 {
		if done, err := e.nameFault(ctx, &r, i, min, at, run, sp, syms); done || err != nil {
			return r, err
		}
	}
	cands, ordered := candidates(d, i, min, at, run)
	flips := e.flipCandidates
	if ordered {
		flips = e.firstUndoing
	}
	chosen, err := flips(ctx, &r, cands)
	fill(&r, d, chosen, run.recs, syms, run.past)
	if err != nil {
		return r, err
	}
	return e.confirmPair(ctx, r, i, min, at, chosen, run, syms)
}

// nameFault names a fault by its window, when one is found (done); else
// it notes why not, and the fault is named as other decisions are.
func (e *explainer) nameFault(ctx context.Context, r *Race, i int, min []sched.Decision, at int, run *failingRun, sp *spec.Spec, syms *symbolizer) (bool, error) {
	d, recs := min[i], run.recs
	// A storage fault's draw first: one run says whether what the cut
	// lost decides the failure, which tells more than the last steps of
	// the window's bisection when the budget is short.
	var st *Storage
	var serr error
	if d.Op.Kind == faults.Power || d.Op.Kind == faults.Corrupt {
		st, serr = e.storage(ctx, i, min, at, recs, syms)
		if serr != nil && !errors.Is(serr, errBudget) {
			return true, serr
		}
	}
	w, ok, err := e.window(ctx, i, min, at, recs, run.keys)
	if errors.Is(err, errBudget) || errors.Is(serr, errBudget) {
		// The fault is still the decision the failure needs: name it by
		// what the search found before the budget ran out.
		partialWindow(r, d, at, &w, st, recs, run.keys, sp, syms)
		return true, errBudget
	}
	if err != nil {
		return true, err
	}
	if !ok || w.before < 0 && w.after < 0 {
		if w.why != "" {
			r.Note = fmt.Sprintf("no window: %s", w.why)
		}
		return false, nil
	}
	r.Effects = effects(recs, at, w.recs, sp, syms)
	r.Storage = st
	fillWindow(r, d, at, &w, recs, run.keys, syms)
	return true, nil
}

// partialWindow names a fault whose window search the budget cut short:
// by the bounds found, its effects when the run without it was made, and
// its storage st when named (else what a power cut lost, which needs no
// run); the note says which side was not searched.
func partialWindow(r *Race, d sched.Decision, at int, w *faultWindow, st *Storage, recs []sched.Record, keys []sched.Key, sp *spec.Spec, syms *symbolizer) {
	if w.recs != nil {
		r.Effects = effects(recs, at, w.recs, sp, syms)
	}
	r.Storage = st
	if st == nil && d.Op.Kind == faults.Power {
		lost := lostWrites(recs, at, syms)
		r.Storage = &Storage{Draw: "persist " + d.Op.Disk, Hit: recs[at].Op.Hit, LostWrites: len(recs[at].Lost), LostAcked: len(lost), Lost: lost[:min(len(lost), maxEffects)]}
	}
	var open []string
	if !w.earlyDone {
		open = append(open, "how early")
	}
	if !w.lateDone {
		open = append(open, "how late")
	}
	r.Note = fmt.Sprintf("the budget ran out while moving the fault: %s it may come was not searched", strings.Join(open, " and "))
	r.Partial = true
	if w.recs == nil {
		w.after, w.before = -1, -1 // no run without it: no bounds
	}
	fillWindow(r, d, at, w, recs, keys, syms)
}

// flipCandidates runs each candidate's flip (at most maxFlips) until one
// makes the failure go away, and returns the pair chosen: that one, else
// the first flipped, else the likeliest.
func (e *explainer) flipCandidates(ctx context.Context, r *Race, cands []candidate) (*candidate, error) {
	var chosen *candidate
	for ci := range cands {
		c := &cands[ci]
		if ci >= maxFlips || c.flip == nil {
			break
		}
		res, err := e.run(ctx, c.flip, false, nil)
		if err != nil {
			if chosen == nil {
				chosen = &cands[0]
			}
			return chosen, err
		}
		got := failureOf(res)
		e.log.Debug("flip", "first", c.first, "second", c.second, "outcome", got.String(), "undoes", got.undoes(e.want))
		if chosen == nil || got.undoes(e.want) {
			chosen = c
			r.Flipped, r.Confirmed, r.FlipOutcome = true, got.undoes(e.want), got.String()
		}
		if got.undoes(e.want) {
			break
		}
	}
	if chosen == nil && len(cands) > 0 {
		chosen = &cands[0]
	}
	return chosen, nil
}

// firstUndoing finds, among ordered candidates (each flip moves the
// decision's op past one more op), the first whose flip undoes the
// failure, galloping from the nearest and then bisecting: its flip undoes
// it and the flip before it does not (for the nearest, the failing run
// itself). That op is the one the decision's op had to come after (a
// hold) or before (a delay): the pair whose order decides the failure,
// confirmed by its flip. Flips are taken as monotone (moved past the op
// that decides, moving it further keeps the failure away), which costs
// O(log n) runs for n candidates. With none undoing it, the nearest is
// returned, flipped but not confirmed.
func (e *explainer) firstUndoing(ctx context.Context, r *Race, cands []candidate) (*candidate, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	outcomes := map[int]failure{}
	undoes := func(k int) (bool, error) {
		f, err := e.outcome(ctx, cands[k].flip)
		if err != nil {
			// Not run (the budget ran out): no outcome, and no flip
			// confirmed by it.
			return false, err
		}
		outcomes[k] = f
		e.log.Debug("flip", "first", cands[k].first, "second", cands[k].second, "outcome", f.String(), "undoes", f.undoes(e.want))
		return f.undoes(e.want), err
	}
	// The likely pairs first (a few): whose flip undoes the failure too,
	// they say it as people do ("LOCK still in flight at WRITE"), where
	// the search below may stop at the op the receiver read them with.
	tried := 0
	for rank := 2; rank > 0; rank-- {
		for k := range cands {
			if cands[k].likely != rank || tried == maxFlips {
				continue
			}
			tried++
			if ok, err := undoes(k); ok || err != nil {
				if ok {
					r.Flipped, r.Confirmed, r.FlipOutcome = true, true, outcomes[k].String()
				}
				return &cands[k], err
			}
		}
	}
	lo, hi := -1, -1 // lo's flip keeps the failure (-1: the failing run), hi's undoes it
	var err error
	for step := 1; err == nil; step *= 2 {
		k := min(lo+step, len(cands)-1)
		var ok bool
		if ok, err = undoes(k); ok {
			hi = k
			break
		}
		if lo = k; k == len(cands)-1 {
			break
		}
	}
	for err == nil && hi-lo > 1 {
		mid := (lo + hi) / 2
		var ok bool
		if ok, err = undoes(mid); ok {
			hi = mid
		} else if err == nil {
			lo = mid
		}
	}
	if hi < 0 {
		if f, ok := outcomes[0]; ok {
			r.Flipped, r.FlipOutcome = true, f.String()
		}
		return &cands[0], err
	}
	r.Flipped, r.Confirmed, r.FlipOutcome = true, true, outcomes[hi].String()
	return &cands[hi], err
}

// confirmPair makes sure the pair named is one the decision ordered and
// whose order decides the failure: when no flip of a pair of unrelated ops
// undid it, or the pair that flipped is no race (a hold's op and a program
// op on another object: two clients' polls, each on its own inbox), the
// pair the run without the decision has the other way round, two messages
// into one inbox (that run, which passes, is the flip). A delay whose own
// pair flipped also names the messages it made race the other way.
func (e *explainer) confirmPair(ctx context.Context, r Race, i int, min []sched.Decision, at int, chosen *candidate, run *failingRun, syms *symbolizer) (Race, error) {
	d := min[i]
	both := chosen != nil && chosen.first >= 0 && chosen.second >= 0
	// A pair one of which happens before the other is no race either.
	noRace := both && (run.past.before(chosen.first, chosen.second) ||
		d.Kind == sched.HoldDecision && program(&run.recs[chosen.first].Op) && !races(run, chosen.first, chosen.second))
	if !r.Confirmed || noRace {
		rr, ok, err := e.reversedRace(ctx, i, min, at, run, syms)
		switch {
		case err != nil:
			return r, err
		case ok:
			return rr, nil
		case !r.Confirmed && r.Note == "":
			r.Note = "no flip of a pair it ordered made the failure go away, and the run without it shows no pair the other way round"
		}
		return r, nil
	}
	if d.Kind == sched.InjectDecision && d.Op.Kind == sched.Advance {
		// A delay holds every op enabled at once: besides the pair its
		// flip undid, the messages it made race the other way.
		rr, ok, err := e.reversedRace(ctx, i, min, at, run, syms)
		if err != nil {
			return r, err
		}
		if ok {
			r.Reorders = &Pair{First: rr.First, Second: rr.Second, Without: rr.FlipOutcome}
			r.Summary += reordersText(r.Reorders)
		}
	}
	return r, nil
}

// fill describes a race's pair.
func fill(r *Race, d sched.Decision, c *candidate, recs []sched.Record, syms *symbolizer, past *causality) {
	if c == nil {
		r.Summary = d.String()
		return
	}
	r.Pending, r.SendReady = c.pending, c.sendReady
	if c.first >= 0 {
		r.First = event(&recs[c.first], syms)
		r.Steps[0] = recs[c.first].Step
		r.Read = readOf(recs, c.first, syms)
	}
	if c.second >= 0 {
		r.Second = event(&recs[c.second], syms)
		r.Steps[1] = recs[c.second].Step
	} else {
		r.Second = heldEvent(d, recs, syms)
	}
	if d.Kind == sched.HoldDecision && c.second >= 0 && recs[c.second].Op.Kind == sched.Deliver {
		r.Behind = behind(recs, c.second)
	}
	if d.Kind == sched.InjectDecision && d.Op.Kind.IsFault() && c.first >= 0 && c.second >= 0 && recs[c.second].Op.Kind.IsFault() {
		// The fault comes right after First; the message it comes
		// before bounds it from the other side.
		if next := nextMessages(recs, c.second, d.Op.Node, 1); len(next) > 0 {
			ev := event(&recs[next[0]], syms)
			r.Before = &ev
		}
	}
	switch {
	case c.second < 0:
		// Held to the end: it never ran, so nothing ordered it after its
		// partner; only the schedule did (its send may come before).
		r.Concurrent = true
	case c.first >= 0:
		a, b := min2(c.first, c.second)
		r.Concurrent = !past.before(a, b)
	}
	r.Summary = summary(d, *r)
}

// candidates lists the pairs decision i (its op at record at, -1 if it
// never ran) may have ordered, each with its flip. A hold's and a delay's
// are ordered, nearest first, and each flip moves the decision's op past
// one more of them (ordered is true): the first whose flip undoes the
// failure is found by galloping and bisecting (firstUndoing). They are
// only ops that were there to reorder (offers): a hold's op was offered
// when its partner was released, a delay's partner was offered beside it.
func candidates(d sched.Decision, i int, min []sched.Decision, at int, run *failingRun) (out []candidate, ordered bool) {
	recs, keys := run.recs, run.keys
	// right after j: the injection moved past record j.
	rightAfter := func(j int) []sched.Decision {
		nd := d
		k := keys[j]
		nd.Anchor(&k)
		return replace(min, i, nd)
	}
	switch {
	case d.Kind == sched.HoldDecision:
		op, end := &d.Op, len(recs)
		if at >= 0 {
			op, end = &recs[at].Op, at
		}
		for _, j := range partners(heldID(d, recs, keys, run.choices), recs, end, run.offers) {
			o := &recs[j].Op
			likely := 0
			if op.Object != "" && o.Object == op.Object && apart(o, op) {
				likely = 1
				if o.Kind == op.Kind {
					likely = 2
				}
			}
			out = append(out, candidate{first: j, second: at, flip: holdBefore(d, i, min, j, at, run), pending: true, likely: likely})
		}
		return out, true
	case d.Op.Kind == sched.Advance:
		// The timeout runs first; the ops it held back come after it.
		inbox := waiterInbox(recs, at)
		for _, j := range overtaken(recs, at, run.offers) {
			o := &recs[j].Op
			likely := 0
			if o.Kind == sched.Deliver && (inbox == "" || o.Object == inbox) {
				likely = 2
			}
			pending := run.offers.at(at, o.ID)
			out = append(out, candidate{first: at, second: j, flip: rightAfter(j), pending: pending, sendReady: !pending, likely: likely})
		}
		if len(out) == 0 {
			out = append(out, candidate{first: prevTraced(recs, at), second: at})
		}
		return out, len(out) > 0 && out[0].flip != nil
	}
	// A fault: after the op before it, before the next messages to its
	// node (its window, when one was found, names it instead).
	if p := prevTraced(recs, at); p >= 0 {
		var after *sched.Key
		if pp := prevTraced(recs, p); pp >= 0 {
			k := keys[pp]
			after = &k
		}
		nd := d
		nd.Anchor(after)
		out = append(out, candidate{first: p, second: at, flip: replace(min, i, nd)})
	}
	for _, j := range nextMessages(recs, at, d.Op.Node, 2) {
		out = append(out, candidate{first: at, second: j, flip: rightAfter(j), pending: run.offers.at(at, recs[j].Op.ID)})
	}
	if len(out) == 0 {
		out = append(out, candidate{first: -1, second: at})
	}
	return out, false
}

// apart says whether two ops on one object can be reordered by the
// schedule: ops of two processes, or two messages of one process on two
// connections (a pool's: pool-1's producer's PUT and its consumer's GET,
// two threads of the app). Two messages on one connection arrive in the
// order they were sent, and a process's own ops on its inbox are its
// receiving, not a rival's.
func apart(a, b *sched.Op) bool {
	if a.Process() != b.Process() {
		return true
	}
	return a.Kind == sched.Deliver && b.Kind == sched.Deliver && a.Conn != "" && b.Conn != "" && a.Conn != b.Conn
}

// holdBefore is the set min with hold i flipped around record j: its op
// (released at record at, -1 if never) waits only until the op just before
// j, so that it comes before j. When j is itself an injection of the set
// (a delay, a fault), which the forced run takes as soon as it is due,
// that injection is moved right after the held op as well.
func holdBefore(d sched.Decision, i int, min []sched.Decision, j, at int, run *failingRun) []sched.Decision {
	recs, keys := run.recs, run.keys
	var after *sched.Key
	if p := prevTraced(recs, j); p >= 0 {
		k := keys[p]
		after = &k
	}
	nd := d
	nd.Anchor(after)
	out := replace(min, i, nd)
	if o := &recs[j].Op; o.Kind != sched.Advance && !o.Kind.IsFault() {
		return out
	}
	held := d.Key
	if at >= 0 {
		held = keys[at]
	}
	for m, dm := range out {
		if m != i && dm.Kind == sched.InjectDecision && findDecision(dm, recs, keys) == j {
			out[m].Anchor(&held)
		}
	}
	return out
}

func min2(a, b int) (int, int) {
	if a < b {
		return a, b
	}
	return b, a
}

func replace(ds []sched.Decision, i int, d sched.Decision) []sched.Decision {
	out := append([]sched.Decision(nil), ds...)
	out[i] = d
	return out
}

// findDecision is the index of the record of d's op in recs, -1 if none.
func findDecision(d sched.Decision, recs []sched.Record, keys []sched.Key) int {
	for i := range recs {
		if recs[i].Auto {
			continue
		}
		k := keys[i]
		if d.Kind == sched.HoldDecision && k == d.Key {
			return i
		}
		if d.Kind == sched.InjectDecision && k.Process == d.Key.Process && k.Kind == d.Key.Kind && k.Object == d.Key.Object &&
			recs[i].Op.Node == d.Op.Node && (d.Op.Kind != sched.Advance || recs[i].Op.At == d.Op.At) {
			return i
		}
	}
	return -1
}

// prevTraced is the record before i that a decision released (not Auto),
// -1 at the start.
func prevTraced(recs []sched.Record, i int) int {
	for j := i - 1; j >= 0; j-- {
		if !recs[j].Auto {
			return j
		}
	}
	return -1
}

// behind lists the data of the deliveries on w's connection released
// after it whose sends came before it (at most four).
func behind(recs []sched.Record, w int) []string {
	sentAt := map[uint64]int{}
	for i := range recs[:w] {
		if recs[i].Op.Kind == sched.Send {
			sentAt[recs[i].Op.ID] = i
		}
	}
	var out []string
	for j := w + 1; j < len(recs) && len(out) < 4; j++ {
		o := &recs[j].Op
		if o.Kind != sched.Deliver || o.Conn != recs[w].Op.Conn || len(recs[j].Data) == 0 {
			continue
		}
		for _, c := range recs[j].Causes {
			if _, ok := sentAt[c]; ok {
				out = append(out, sched.FormatData(recs[j].Data, sched.DataLen(&recs[j])))
				break
			}
		}
	}
	return out
}

// nextMessages are the first n deliveries after record at into a node's
// processes.
func nextMessages(recs []sched.Record, at int, node string, n int) []int {
	var out []int
	for j := at + 1; j < len(recs) && len(out) < n; j++ {
		if o := &recs[j].Op; o.Kind == sched.Deliver && receiver(o) == node {
			out = append(out, j)
		}
	}
	return out
}

// maxPartners bounds the ops a decision's pair is looked for among.
const maxPartners = 64

// partners are the ops a held op (ID id, released at w, or never: w is
// then len(recs)) was passed over for, nearest first: the ops released
// while it was offered. One released before it existed raced with
// nothing.
func partners(id uint64, recs []sched.Record, w int, of offers) []int {
	var out []int
	for j := w - 1; j >= 0 && len(out) < maxPartners; j-- {
		if !recs[j].Auto && recs[j].Op.ID != id && of.at(j, id) {
			out = append(out, j)
		}
	}
	return out
}

// overtaken are the ops a delay (an advance at record a) held back, that
// ran only after the timeout, nearest first: ops offered beside it (an op
// not yet there was not held back: it came later, maybe because of the
// timeout), and the deliveries of the sends among them (a server ready to
// answer when the client's wait timed out: its answer is the message the
// timeout did not wait for, though it was not yet sent). The waiting
// thread's own ops are not: they follow its timeout.
func overtaken(recs []sched.Record, a int, of offers) []int {
	adv := &recs[a].Op
	var out []int
	for j := a + 1; j < len(recs) && len(out) < maxPartners; j++ {
		o := &recs[j].Op
		if recs[j].Auto || o.LPID == adv.LPID {
			continue
		}
		if of.at(a, o.ID) || o.Kind == sched.Deliver && slices.ContainsFunc(recs[j].Causes, func(c uint64) bool { return of.at(a, c) }) {
			out = append(out, j)
		}
	}
	return out
}

// heldEvent describes an op held to the end of the run, with the data of
// its send when it is a delivery.
func heldEvent(d sched.Decision, recs []sched.Record, syms *symbolizer) Event {
	r := sched.Record{Op: d.Op}
	s := sendOf(d.Op, recs)
	if d.Op.Datagram() {
		s = datagramSendOf(d, recs)
	}
	if s >= 0 {
		r.Data, r.Result = recs[s].Data, recs[s].Result
	}
	ev := event(&r, syms)
	ev.Comment = "(never released: in flight when the run failed)"
	return ev
}

// sendOf is the record of the send a delivery carries: the last send of
// its thread from the same call site to the same peer. -1 if none.
func sendOf(op sched.Op, recs []sched.Record) int {
	if op.Kind != sched.Deliver {
		return -1
	}
	for j := len(recs) - 1; j >= 0; j-- {
		o := &recs[j].Op
		if o.Kind == sched.Send && o.LPID == op.LPID && o.Site == op.Site && o.Peer == op.Peer {
			return j
		}
	}
	return -1
}

// datagramSendOf is the record of the send of the datagram a hold kept to
// the end of the run, -1 if none. The last send there will not do: a
// socket's datagrams overtake one another, and the one lost is often an
// early one. Its key numbers it among its process's datagrams from that
// call site in the order they were sent (sched.Keyer), which is its
// place among those sends to that peer (the socket's address pair is left
// out: a socket's first send goes out before it is bound).
func datagramSendOf(d sched.Decision, recs []sched.Record) int {
	n := 0
	for j := range recs {
		o := &recs[j].Op
		if o.Kind != sched.Send || o.Process() != d.Op.Process() || o.Site != d.Op.Site || o.Peer != d.Op.Peer {
			continue
		}
		if n == d.Key.N {
			return j
		}
		n++
	}
	return -1
}

// readOf is the recv that read the delivery at d, nil if none did.
func readOf(recs []sched.Record, d int, syms *symbolizer) *Event {
	if recs[d].Op.Kind != sched.Deliver {
		return nil
	}
	id := recs[d].Op.ID
	for j := d + 1; j < len(recs); j++ {
		for _, c := range recs[j].Causes {
			if c == id && recs[j].Op.Kind == sched.Recv {
				ev := event(&recs[j], syms)
				return &ev
			}
		}
	}
	return nil
}

func event(r *sched.Record, syms *symbolizer) Event {
	op := &r.Op
	ev := Event{Step: r.Step, Node: op.Node, LPID: op.LPID, Thread: op.Thread, Op: op.Kind.String(), Peer: op.Peer, Site: op.Site}
	if op.Syscall != "" && op.Syscall != ev.Op && op.Kind != sched.Deliver {
		ev.Op += "(" + op.Syscall + ")"
	}
	if op.Kind == sched.Deliver {
		ev.To = strings.TrimPrefix(op.Object, "inbox:")
	}
	if len(r.Data) > 0 {
		ev.Data = sched.FormatData(r.Data, sched.DataLen(r))
		if k := syms.kind(r); k != nil {
			ev.Kind = k.Label()
		}
	}
	if op.Kind == sched.Advance || op.Kind.IsFault() {
		ev.Comment = sched.Describe(*r)
		if op.Kind.IsFault() {
			ev.LPID = op.Node // a fault's LPID is "fault": name its target
		}
	}
	if op.Site != "" || op.Caller != "" {
		ev.Caller = op.Caller
		ev.Func, ev.File, ev.Line = syms.where(op)
	}
	return ev
}

func behindText(b []string) string {
	if len(b) == 0 {
		return ""
	}
	return " (and " + strings.Join(b, ", ") + " behind it)"
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func readWhere(ev *Event) string {
	if ev == nil || ev.Where() == "" {
		return ""
	}
	return ev.Node + " reads it at " + ev.Where()
}

// who names an event's actor for a sentence: "starter's LOCK".
func who(ev Event) string {
	s := ev.Node + "'s"
	switch {
	case (ev.Op == sched.Recv.String() || strings.HasPrefix(ev.Op, sched.Recv.String()+"(")) && (ev.Data != "" || ev.Peer != ""):
		if ev.Data != "" {
			return s + " read of " + ev.message()
		}
		return fmt.Sprintf("%s read of no bytes from %s (its peer's close)", s, ev.Peer)
	case strings.HasPrefix(ev.Op, sched.Advance.String()+"("):
		// "app's clock_nanosleep timeout (to 0.060s (+50ms))"
		wait := strings.TrimSuffix(strings.TrimPrefix(ev.Op, sched.Advance.String()+"("), ")")
		return fmt.Sprintf("%s %s timeout (%s)", s, wait, ev.Comment)
	case ev.Data != "":
		s += " " + ev.message()
	default:
		s += " " + ev.Op
	}
	return s
}

// message names an event's message for a sentence: its bytes where they
// read as text ("LOCK\n"), else its kind, which says more than binary
// bytes do.
func (ev Event) message() string {
	if ev.binary() {
		return ev.Kind
	}
	return ev.Data
}

// binary says whether the event's message has a kind and bytes that are
// not text.
func (ev Event) binary() bool {
	if ev.Kind == "" {
		return false
	}
	b, err := strconv.Unquote(strings.TrimSuffix(ev.Data, "…"))
	return err == nil && !coverage.Text([]byte(b))
}

// summary is a race's sentence. Its clauses keep causes before effects:
// a message is "in flight" at an op, or a timeout comes "while" it is,
// only when it was offered there (Pending), that is sent before; else
// the sentence says only which came first.
func summary(d sched.Decision, r Race) string {
	var s string
	deliver := sched.Deliver.String()
	switch {
	case d.Kind == sched.HoldDecision && r.First.Op == deliver && r.Second.Op == deliver && r.Pending:
		s = fmt.Sprintf("fails when %s to %s%s is still in flight at %s to %s", who(r.Second), r.Second.To, behindText(r.Behind), who(r.First), r.First.To)
	case d.Kind == sched.HoldDecision && r.Second.Op == deliver && r.Pending:
		s = fmt.Sprintf("fails when %s to %s is still in flight at %s", who(r.Second), r.Second.To, who(r.First))
	case d.Kind == sched.HoldDecision && r.Second.Op == deliver:
		s = fmt.Sprintf("fails when %s to %s arrives after %s", who(r.Second), r.Second.To, who(r.First))
	case d.Kind == sched.HoldDecision && r.Pending:
		s = fmt.Sprintf("fails when %s waits until after %s", who(r.Second), who(r.First))
	case d.Kind == sched.HoldDecision:
		s = fmt.Sprintf("fails when %s comes after %s", who(r.Second), who(r.First))
	case d.Op.Kind == sched.Advance && r.Second.Op == deliver && r.Pending:
		s = fmt.Sprintf("fails when %s's %s times out (%s) while %s to %s is in flight", r.First.Node, d.Op.Syscall, r.First.Comment, who(r.Second), r.Second.To)
	case d.Op.Kind == sched.Advance && r.Second.Op == deliver && r.SendReady:
		s = fmt.Sprintf("fails when %s's %s times out (%s) before %s to %s arrives, which %s was ready to send", r.First.Node, d.Op.Syscall, r.First.Comment, who(r.Second), r.Second.To, r.Second.Node)
	case d.Op.Kind == sched.Advance && r.Second.Op == deliver:
		s = fmt.Sprintf("fails when %s's %s times out (%s) before %s to %s arrives", r.First.Node, d.Op.Syscall, r.First.Comment, who(r.Second), r.Second.To)
	case d.Op.Kind == sched.Advance && r.Pending:
		s = fmt.Sprintf("fails when %s's %s times out (%s) before %s, which was ready to run", r.First.Node, d.Op.Syscall, r.First.Comment, runs(r.Second))
	default:
		s = fmt.Sprintf("fails when the %s of %s%s comes right after %s", r.Second.Op, r.Second.Node, paren(r.Second.Comment), who(r.First))
	case d.Op.Kind.IsFault() && r.Before != nil:
		s = fmt.Sprintf("fails when the %s of %s%s comes right after %s and before %s to %s", r.Second.Op, r.Second.Node, paren(r.Second.Comment), who(r.First), who(*r.Before), r.Before.To)
	case d.Op.Kind.IsFault() && r.Second.Op == sched.Deliver.String():
		s = fmt.Sprintf("fails when the %s of %s%s comes before %s to %s", r.First.Op, r.First.Node, paren(r.First.Comment), who(r.Second), r.Second.To)
	}
	// Where the receiver took the message that won, then where the two
	// were sent from.
	seen := map[string]bool{"": true}
	for _, w := range []string{readWhere(r.Read), r.Second.Where(), r.First.Where()} {
		if !seen[w] {
			s += "; " + w
			seen[w] = true
		}
	}
	return s
}

// runs names an op that runs, for a sentence: "b sends "GET 1\n"", "a
// connects".
func runs(ev Event) string {
	switch op, _, _ := strings.Cut(ev.Op, "("); {
	case op == sched.Send.String() && ev.Data != "":
		return ev.Node + " sends " + ev.message()
	case op == sched.Recv.String() && ev.Data != "":
		return ev.Node + " reads " + ev.message()
	case op == sched.Connect.String():
		return ev.Node + " connects"
	case op == sched.Accept.String():
		return ev.Node + " accepts"
	}
	return ev.Node + "'s " + ev.Op + " runs"
}

// Pair is two ops of the failing run in the order a decision made.
type Pair struct {
	First   Event  `json:"first"`
	Second  Event  `json:"second"`
	Without string `json:"without"`
}

func reordersText(p *Pair) string {
	s := fmt.Sprintf("; it makes %s", who(p.First))
	if p.First.To != "" {
		s += " to " + p.First.To
	}
	s += " arrive before " + who(p.Second)
	if p.Second.To != "" && p.Second.To != p.First.To {
		s += " to " + p.Second.To
	}
	return s + " (without it they come the other way round: " + p.Without + ")"
}
