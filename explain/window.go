package explain

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/sched"
)

// A fault is named by its window: the ops it must come after and before
// for the failure to happen, found by moving it. The run without the
// fault (which passes: the set is 1-minimal) is the reference: the fault
// is injected right after each of its ops in turn, galloping away from
// where the failing run took it, and the nearest op on each side where
// the failure goes away bounds the window. Each bound is a flip: the
// fault right after the op before the bound still fails, right after the
// bound it does not. What a user needs follows: the op the fault raced
// with (a message it cut off, held across the cut, or an answer that had
// to arrive first), and what it had to wait for.

// faultWindow is a fault's window in the run without it.
type faultWindow struct {
	recs []sched.Record // the run without the fault
	keys []sched.Key
	// after is the index in recs of the op the fault must follow, -1 if
	// it may come as early as the start; before the op it must precede,
	// -1 if none was found.
	after, before int
	// early and late are how runs ended with the fault moved right
	// before after, and right after before.
	early, late failure
	// why says why no window was searched ("" when one was).
	why string
	// lateDone and earlyDone say each side's search finished: when the
	// budget runs out during one, the bounds found before it stand.
	lateDone, earlyDone bool
}

// window finds decision i's window (a fault injected at record at of the
// minimized run recs). ok is false when the fault's place cannot be found
// in the run without it, or moving it does not keep the failure.
func (e *explainer) window(ctx context.Context, i int, set []sched.Decision, at int, recs []sched.Record, keys []sched.Key) (w faultWindow, ok bool, err error) {
	run, err := e.withoutRun(ctx, set, i)
	if err != nil {
		return w, false, err
	}
	w = faultWindow{recs: run.res.Records, keys: run.keys, after: -1, before: -1}
	m := &faultMover{e: e, set: set, i: i, keys: w.keys}
	// The ops a fault can follow: the run's own, not a quiet period's.
	for j := range w.recs {
		if !w.recs[j].Auto {
			m.ops = append(m.ops, j)
		}
	}
	// Where the failing run took the fault: after the op before it.
	j0 := -1
	if p := prevTraced(recs, at); p >= 0 {
		if j0 = m.place(keys[p]); j0 == -2 {
			w.why = fmt.Sprintf("the op it followed (%v) is not in the run without it", keys[p])
			return w, false, nil
		}
	}
	if f, _, err := m.moved(ctx, j0); err != nil || !f.is(e.want) {
		if err == nil {
			w.why = fmt.Sprintf("put back at its place in the run without it, the run ended %v", f)
		}
		return w, false, err
	}
	hi, late, err := m.laterBound(ctx, j0)
	if err != nil {
		return w, false, err
	}
	if hi >= 0 {
		w.before, w.late = m.ops[hi], late
	}
	w.lateDone = true
	lo, early, err := m.earlierBound(ctx, j0)
	if err != nil {
		return w, true, err
	}
	if lo > -2 {
		// The fault right after ops[lo] does not fail, right after
		// ops[lo+1] it does: it must follow ops[lo+1].
		w.after, w.early = m.ops[lo+1], early
	}
	w.earlyDone = true
	return w, true, nil
}

// faultMover runs the trial with decision i of set moved among ops (the
// indices of the run without the fault's own ops, whose keys are keys).
type faultMover struct {
	e    *explainer
	set  []sched.Decision
	i    int
	ops  []int
	keys []sched.Key
}

// place is the position in ops of the op whose key is k, -2 if none.
func (m *faultMover) place(k sched.Key) int {
	for n, j := range m.ops {
		if m.keys[j] == k {
			return n
		}
	}
	return -2
}

// moved runs the trial with the fault right after ops[n] (n = -1: at the
// start); same says it still fails the same way.
func (m *faultMover) moved(ctx context.Context, n int) (failure, bool, error) {
	var after *sched.Key
	if n >= 0 {
		k := m.keys[m.ops[n]]
		after = &k
	}
	nd := m.set[m.i]
	nd.Anchor(after)
	f, err := m.e.outcome(ctx, replace(m.set, m.i, nd))
	// A run lockstep could not make counts as failing: a bound is always
	// a run that shows the failure gone.
	return f, !f.undoes(m.e.want), err
}

// laterBound moves the fault later from j0: gallop until the failure goes
// away, then bisect. The far end first: a fault that still fails moved to
// the run's last op has no later bound (the bisection takes the failure
// as monotone in the fault's place too), and one run says so instead of a
// gallop's dozen over a long trace. hi is the first place where the
// failure is gone (-1: none), late how that run ended.
func (m *faultMover) laterBound(ctx context.Context, j0 int) (hi int, late failure, err error) {
	lo, hi := j0, -1
	if last := len(m.ops) - 1; last > j0+1 {
		_, same, err := m.moved(ctx, last)
		if err != nil {
			return -1, late, err
		}
		if same {
			lo = last
		}
	}
	for step := 1; lo < len(m.ops)-1; step *= 2 {
		n := min(j0+step, len(m.ops)-1)
		f, same, err := m.moved(ctx, n)
		if err != nil {
			return -1, late, err
		}
		if !same {
			hi, late = n, f
			break
		}
		lo = n
	}
	for hi >= 0 && hi-lo > 1 {
		mid := (lo + hi) / 2
		f, same, err := m.moved(ctx, mid)
		if err != nil {
			return -1, late, err
		}
		if same {
			lo = mid
		} else {
			hi, late = mid, f
		}
	}
	return hi, late, nil
}

// earlierBound is laterBound towards the start, its far end (the fault
// before every op) first: lo is the last place before j0 where the
// failure is gone (-2: none), early how that run ended.
func (m *faultMover) earlierBound(ctx context.Context, j0 int) (lo int, early failure, err error) {
	lo, hi := -2, j0 // lo: passes (-2: none found), hi: fails
	if j0 > 0 {
		_, same, err := m.moved(ctx, -1)
		if err != nil {
			return -2, early, err
		}
		if same {
			hi = -1
		}
	}
	for step := 1; hi > -1; step *= 2 {
		n := max(j0-step, -1)
		f, same, err := m.moved(ctx, n)
		if err != nil {
			return -2, early, err
		}
		if !same {
			lo, early = n, f
			break
		}
		hi = n
	}
	for lo > -2 && hi-lo > 1 {
		mid := (lo + hi) / 2
		f, same, err := m.moved(ctx, mid)
		if err != nil {
			return -2, early, err
		}
		if same {
			hi = mid
		} else {
			lo, early = mid, f
		}
	}
	return lo, early, nil
}

// windowEvent describes op j of the run without the fault, as the failing
// run has it when it has the same op (the same key, thread and data: a
// message held across a cut and delivered later), else as cut off.
func windowEvent(w *faultWindow, j int, recs []sched.Record, keys []sched.Key, syms *symbolizer) (Event, int) {
	r := &w.recs[j]
	for x := range recs {
		if keys[x] == w.keys[j] && !recs[x].Auto && recs[x].Op.LPID == r.Op.LPID && string(recs[x].Data) == string(r.Data) {
			return event(&recs[x], syms), x
		}
	}
	ev := event(r, syms)
	ev.Step = 0 // a step of another run
	ev.Cut = true
	return ev, -1
}

// fillWindow names a fault's race from its window.
func fillWindow(r *Race, d sched.Decision, at int, w *faultWindow, recs []sched.Record, keys []sched.Key, syms *symbolizer) {
	r.Second = event(&recs[at], syms)
	r.Steps[1] = recs[at].Step
	r.Concurrent = true // a fault is no op's effect: only the schedule placed it
	if w.after >= 0 {
		ev, x := windowEvent(w, w.after, recs, keys, syms)
		r.First = ev
		if x >= 0 {
			r.Steps[0] = recs[x].Step
		}
		r.EarlyOutcome = w.early.String()
	}
	if w.before >= 0 {
		ev, x := windowEvent(w, w.before, recs, keys, syms)
		r.Before = &ev
		if x >= 0 && r.Steps[0] == 0 {
			r.Steps[0] = recs[x].Step
		}
		r.Flipped, r.Confirmed, r.FlipOutcome = true, true, w.late.String()
	}
	r.Summary = windowSummary(d, *r)
}

// message names an event for a sentence, with a delivery's receiver.
func message(ev Event) string {
	s := who(ev)
	if ev.To != "" {
		s += " to " + ev.To
	}
	if ev.Cut {
		s += " (which it cuts off)"
	}
	return s
}

func windowSummary(d sched.Decision, r Race) string {
	fault := fmt.Sprintf("the %s of %s%s", r.Second.Op, r.Second.Node, paren(r.Second.Comment))
	var s string
	switch {
	case r.Storage != nil && r.Storage.Down != nil:
		// A corruption is offered only while its node is down: that is
		// its window, whatever ops of others bound it.
		s = fmt.Sprintf("fails when %s comes %s", fault, downText(r.Storage))
	case r.First.Op != "" && r.Before != nil:
		s = fmt.Sprintf("fails when %s comes after %s and before %s", fault, message(r.First), message(*r.Before))
	case r.Before != nil:
		s = fmt.Sprintf("fails when %s comes before %s", fault, message(*r.Before))
	case r.First.Op != "":
		s = fmt.Sprintf("fails when %s comes after %s", fault, message(r.First))
	case r.Partial:
		s = fmt.Sprintf("fails with %s where the trace has it (moving it was cut short)", fault)
	default:
		s = fmt.Sprintf("fails when %s comes anywhere", fault)
	}
	s += effectsText(r.Effects, r.Second.Op)
	s += storageText(r.Storage)
	seen := map[string]bool{"": true}
	var where []string
	if r.Before != nil {
		where = append(where, r.Before.Where())
	}
	for _, w := range append(where, r.First.Where()) {
		if !seen[w] {
			s += "; " + w
			seen[w] = true
		}
	}
	return s
}

// effectsText is a clause on what a fault did while it lasted.
func effectsText(ef *Effects, fault string) string {
	if ef == nil {
		return ""
	}
	var parts []string
	if len(ef.Inside) > 0 {
		p := "among the cut-off nodes " + message(ef.Inside[0])
		if len(ef.Inside) > 1 && ef.Inside[1].Node == ef.Inside[0].To {
			p += ", answered " + ef.Inside[1].message()
		}
		parts = append(parts, p)
	}
	if len(ef.Held) > 0 {
		parts = append(parts, message(ef.Held[0])+heldVerb(fault))
	}
	if len(ef.New) > 0 {
		var news []string
		for _, ev := range ef.New {
			news = append(news, message(ev))
		}
		parts = append(parts, "the others send what they never send without it, "+strings.Join(news, ", "))
	}
	return "; while it lasts, " + strings.Join(parts, "; ")
}
