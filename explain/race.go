package explain

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/faults"
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
	if ev.Comment != "" {
		s += " " + ev.Comment
	}
	if w := ev.Where(); w != "" {
		s += " at " + w
	}
	return s
}

// Where is the call site as file:line (function), or module+offset.
func (ev Event) Where() string {
	switch {
	case ev.File != "":
		w := fmt.Sprintf("%s:%d", ev.File, ev.Line)
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
	// Concurrent says neither op happens before the other (eBPF-matched
	// deliveries, program order, the trace's causes): only the schedule
	// ordered them.
	Concurrent bool `json:"concurrent"`
	// Reorders is, for a delay whose own flip undid the failure, the
	// first pair into one inbox it reversed (the run without it has them
	// the other way round and ends Without).
	Reorders *Pair `json:"reorders,omitempty"`
	// Note says what could not be done for this race.
	Note string `json:"note,omitempty"`
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
}

// maxFlips bounds the candidate pairs tried per decision.
const maxFlips = 3

// name names each decision of min in the minimized run's records: of the
// pairs it may have ordered, the first whose flip makes the failure go
// away (at most maxFlips tried), else the likeliest.
func (e *explainer) name(ctx context.Context, min []sched.Decision, recs []sched.Record, sp *spec.Spec, syms *symbolizer) ([]Race, error) {
	keys := sched.Keys(recs)
	past := newCausality(recs)
	var out []Race
	for i, d := range min {
		at := findDecision(d, recs, keys)
		if at < 0 && d.Kind != sched.HoldDecision {
			out = append(out, Race{Decision: d, Summary: fmt.Sprintf("%v: its op did not run in the minimized run", d)})
			continue
		}
		r := Race{Decision: d}
		if d.Kind == sched.InjectDecision && d.Op.Kind.IsFault() && at >= 0 {
			w, ok, err := e.window(ctx, i, min, at, recs, keys)
			if err != nil {
				return out, err
			}
			if ok && (w.before >= 0 || w.after >= 0) {
				r.Effects = effects(recs, at, w.recs, sp, syms)
				var serr error
				if d.Op.Kind == faults.Power || d.Op.Kind == faults.Corrupt {
					r.Storage, serr = e.storage(ctx, i, min, at, recs, syms)
				}
				fillWindow(&r, d, at, &w, recs, keys, syms)
				if serr != nil {
					return append(out, r), serr
				}
				out = append(out, r)
				continue
			}
			if w.why != "" {
				r.Note = fmt.Sprintf("no window: %s", w.why)
			}
		}
		cands := candidates(d, i, min, at, recs, keys)
		var chosen *candidate
		for ci := range cands {
			c := &cands[ci]
			if ci >= maxFlips || c.flip == nil {
				break
			}
			res, _, err := e.run(ctx, c.flip, false)
			if err != nil {
				if chosen == nil {
					chosen = &cands[0]
				}
				fill(&r, d, chosen, recs, syms, past)
				return append(out, r), err
			}
			got := failureOf(res)
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
		fill(&r, d, chosen, recs, syms, past)
		if !r.Confirmed || chosen != nil && chosen.first >= 0 && chosen.second >= 0 && past.before(chosen.first, chosen.second) {
			// No flip of a pair of unrelated ops undid the failure: the
			// pair the decision reversed, if the run without it shows one.
			rr, ok, err := e.reversedRace(ctx, i, min, at, recs, syms, past)
			if err != nil {
				return append(out, r), err
			}
			if ok {
				r = rr
			}
		} else if d.Kind == sched.InjectDecision && d.Op.Kind == sched.Advance {
			// A delay holds every op enabled at once: besides the pair its
			// flip undid, the messages it made race the other way.
			rr, ok, err := e.reversedRace(ctx, i, min, at, recs, syms, past)
			if err != nil {
				return append(out, r), err
			}
			if ok {
				r.Reorders = &Pair{First: rr.First, Second: rr.Second, Without: rr.FlipOutcome}
				r.Summary += reordersText(r.Reorders)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// fill describes a race's pair.
func fill(r *Race, d sched.Decision, c *candidate, recs []sched.Record, syms *symbolizer, past *causality) {
	if c == nil {
		r.Summary = d.String()
		return
	}
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
// never ran) may have ordered, likeliest first, each with its flip.
func candidates(d sched.Decision, i int, min []sched.Decision, at int, recs []sched.Record, keys []sched.Key) []candidate {
	var out []candidate
	// after is a copy of d that waits for (or comes right after) the op
	// just before record j: the pair the other way round.
	after := func(j int) []sched.Decision {
		nd := d
		nd.After = nil
		if p := prevTraced(recs, j); p >= 0 {
			k := keys[p]
			nd.After = &k
		}
		return replace(min, i, nd)
	}
	switch {
	case d.Kind == sched.HoldDecision:
		op, end := &d.Op, len(recs)
		if at >= 0 {
			op, end = &recs[at].Op, at
		}
		for _, j := range partners(op, recs, end) {
			out = append(out, candidate{first: j, second: at, flip: after(j)})
		}
	case d.Op.Kind == sched.Advance:
		// The timeout runs first; the messages it overtook are the
		// deliveries into the waiter's inbox after it.
		for _, j := range lateDeliveries(recs, at) {
			nd := d
			k := keys[j]
			nd.After = &k
			out = append(out, candidate{first: at, second: j, flip: replace(min, i, nd)})
		}
		if len(out) == 0 {
			out = append(out, candidate{first: prevTraced(recs, at), second: at})
		}
	default: // a fault: after the op before it, before the next messages to its node
		if p := prevTraced(recs, at); p >= 0 {
			out = append(out, candidate{first: p, second: at, flip: after(p)})
		}
		for _, j := range nextMessages(recs, at, d.Op.Node, 2) {
			nd := d
			k := keys[j]
			nd.After = &k
			out = append(out, candidate{first: at, second: j, flip: replace(min, i, nd)})
		}
		if len(out) == 0 {
			out = append(out, candidate{first: -1, second: at})
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

// partners are the ops a held op (released at w, or never: w is then
// len(recs)) may have raced with, likeliest first: the last ops before it
// of the same kind on the same object from another process (two
// deliveries into one inbox), then the last on the same object, then the
// op just before it.
func partners(op *sched.Op, recs []sched.Record, w int) []int {
	var out []int
	seen := map[int]bool{}
	add := func(j int) {
		if j >= 0 && !seen[j] && len(out) < maxFlips {
			seen[j] = true
			out = append(out, j)
		}
	}
	if op.Object != "" {
		for j := w - 1; j >= 0; j-- {
			o := &recs[j].Op
			if o.Kind == op.Kind && o.Object == op.Object && o.Process() != op.Process() {
				add(j)
			}
		}
		for j := w - 1; j >= 0; j-- {
			if o := &recs[j].Op; o.Object == op.Object && o.Process() != op.Process() {
				add(j)
			}
		}
	}
	add(prevTraced(recs, w))
	return out
}

// lateDeliveries are the first deliveries after an advance at a into the
// waiting thread's inbox.
func lateDeliveries(recs []sched.Record, a int) []int {
	adv := &recs[a].Op
	inbox := ""
	for j := a + 1; j < len(recs); j++ {
		if o := &recs[j].Op; o.LPID == adv.LPID && strings.HasPrefix(o.Object, "inbox:") {
			inbox = o.Object
			break
		}
	}
	for j := a - 1; j >= 0 && inbox == ""; j-- {
		if o := &recs[j].Op; o.LPID == adv.LPID && strings.HasPrefix(o.Object, "inbox:") {
			inbox = o.Object
		}
	}
	var out []int
	for j := a + 1; j < len(recs) && len(out) < maxFlips; j++ {
		if o := &recs[j].Op; o.Kind == sched.Deliver && (inbox == "" || o.Object == inbox) {
			out = append(out, j)
		}
	}
	return out
}

// heldEvent describes an op held to the end of the run, with the data of
// its send when it is a delivery.
func heldEvent(d sched.Decision, recs []sched.Record, syms *symbolizer) Event {
	r := sched.Record{Op: d.Op}
	if s := sendOf(d.Op, recs); s >= 0 {
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
	case ev.Op == sched.Recv.String() || strings.HasPrefix(ev.Op, sched.Recv.String()+"("):
		if ev.Data != "" {
			return s + " read of " + ev.Data
		}
		return fmt.Sprintf("%s read of no bytes from %s (its peer's close)", s, ev.Peer)
	case ev.Data != "":
		s += " " + ev.Data
	default:
		s += " " + ev.Op
	}
	return s
}

func summary(d sched.Decision, r Race) string {
	var s string
	switch {
	case d.Kind == sched.HoldDecision && r.First.Op == sched.Deliver.String() && r.Second.Op == sched.Deliver.String():
		s = fmt.Sprintf("fails when %s to %s%s is still in flight at %s to %s", who(r.Second), r.Second.To, behindText(r.Behind), who(r.First), r.First.To)
	case d.Kind == sched.HoldDecision && r.Second.Op == sched.Deliver.String():
		s = fmt.Sprintf("fails when %s to %s is still in flight at %s", who(r.Second), r.Second.To, who(r.First))
	case d.Kind == sched.HoldDecision:
		s = fmt.Sprintf("fails when %s waits until after %s", who(r.Second), who(r.First))
	case d.Op.Kind == sched.Advance && r.Second.Op == sched.Deliver.String():
		s = fmt.Sprintf("fails when %s's %s times out (%s) while %s to %s is in flight", r.First.Node, d.Op.Syscall, r.First.Comment, who(r.Second), r.Second.To)
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
