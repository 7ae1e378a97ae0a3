package explain

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/sched"
)

// When no pair a decision may have ordered flips on its own (a delay
// holds every op enabled at once; a hold's key names whichever of a
// process's threads comes next), the pair is read off the run without the
// decision, which passes: the first two messages into one inbox, or two
// reads of one node by different threads, that come in the failing run in
// the order opposite to the passing one's. That run is the flip.

// opIdentity names an op across runs: its thread, kind, object and data,
// and how many such ops came before it (keys count per process, which
// moves when two threads' reads swap).
func opIdentities(recs []sched.Record) []string {
	seen := map[string]int{}
	out := make([]string, len(recs))
	for i := range recs {
		o := &recs[i].Op
		base := fmt.Sprintf("%s|%v|%s|%q", o.LPID, o.Kind, o.Object, recs[i].Data)
		out[i] = fmt.Sprintf("%s#%d", base, seen[base])
		seen[base]++
	}
	return out
}

// racing says whether an op can be one of a reversed pair: a delivery into
// an inbox, or a read of one.
func racing(o *sched.Op) bool {
	return (o.Kind == sched.Deliver || o.Kind == sched.Recv) && strings.HasPrefix(o.Object, "inbox:")
}

// reversedPair finds, in the failing run recs from index from on, the
// first pair of racing ops on one inbox, of different threads, that the
// passing run other has the other way round: a before b in recs, and a
// not in b's causal past (then no run has them the other way: the two
// are other instances there). ok is false when there is none.
func reversedPair(recs, other []sched.Record, from int, past *causality) (a, b int, ok bool) {
	// The first such b, with the earliest a before it: the decision's
	// first effect, and the first message that overtook b (bob's LOCK,
	// not his WRITE that followed it, both ahead of alice's LOCK).
	ids, oids := opIdentities(recs), opIdentities(other)
	pos := make(map[string]int, len(other))
	for j, id := range oids {
		pos[id] = j
	}
	for b = max(from, 0); b < len(recs); b++ {
		ob := &recs[b].Op
		pb, inOther := pos[ids[b]]
		if !racing(ob) || !inOther {
			continue
		}
		for a = max(from, 0); a < b; a++ {
			oa := &recs[a].Op
			if !racing(oa) || oa.Object != ob.Object || oa.LPID == ob.LPID || oa.Kind != ob.Kind {
				continue
			}
			if pa, in := pos[ids[a]]; in && pa > pb && !past.before(a, b) {
				return a, b, true
			}
		}
	}
	return 0, 0, false
}

// reversedRace names decision i of set by the pair it reversed, from the
// run without it; ok is false when that run fails too or no pair is
// found.
func (e *explainer) reversedRace(ctx context.Context, i int, set []sched.Decision, at int, run *failingRun, syms *symbolizer) (Race, bool, error) {
	d, recs, past := set[i], run.recs, run.past
	res, err := e.without(ctx, set, i)
	if err != nil {
		return Race{}, false, err
	}
	got := failureOf(res)
	if !got.undoes(e.want) {
		return Race{}, false, nil
	}
	// Up to the decision's first effect the two runs are one, and a pair
	// before it is none of its doing: "as the delay makes them" of a
	// message delivered before the delay would put the effect before its
	// cause.
	a, b, ok := reversedPair(recs, res.Records, firstEffect(d, at, run), past)
	if !ok {
		return Race{}, false, nil
	}
	r := Race{Decision: d, First: event(&recs[a], syms), Second: event(&recs[b], syms), Reversed: true}
	r.Steps = [2]int{recs[a].Step, recs[b].Step}
	r.Read = readOf(recs, a, syms)
	r.Flipped, r.Confirmed, r.FlipOutcome = true, true, got.String()
	r.Concurrent = !past.before(a, b)
	if at >= 0 {
		ev := event(&recs[at], syms)
		r.By = &ev
	}
	r.Summary = reversedSummary(d, r)
	return r, true, nil
}

// firstEffect is the first record of run where decision d (its op at
// record at, -1 if it never ran) acted: an injection where it was
// injected, a hold where its op was first passed over; 0 when unknown.
func firstEffect(d sched.Decision, at int, run *failingRun) int {
	if d.Kind == sched.InjectDecision {
		return max(at, 0)
	}
	if j := run.offers.firstPassed(run.recs, heldID(d, run.recs, run.keys, run.choices)); j >= 0 {
		return j
	}
	return 0
}

func reversedSummary(d sched.Decision, r Race) string {
	var s string
	if r.First.Op == sched.Deliver.String() {
		s = fmt.Sprintf("fails when %s to %s arrives before %s", who(r.First), r.First.To, who(r.Second))
		if r.Second.To != "" && r.Second.To != r.First.To {
			s += " to " + r.Second.To
		}
	} else {
		s = fmt.Sprintf("fails when %s (%s) comes before %s (%s)", who(r.First), r.First.LPID, who(r.Second), r.Second.LPID)
	}
	switch {
	case r.By != nil && d.Kind == sched.InjectDecision && d.Op.Kind == sched.Advance:
		s += fmt.Sprintf(", as the delay of %s's %s %s makes them", r.By.Node, d.Op.Syscall, r.By.Comment)
	case r.By != nil && d.Kind == sched.InjectDecision:
		s += fmt.Sprintf(", as the %s of %s makes them", r.By.Op, r.By.Node)
	case r.By != nil:
		s += fmt.Sprintf(", as holding %s makes them", who(*r.By))
	}
	seen := map[string]bool{"": true}
	for _, w := range []string{readWhere(r.Read), r.First.Where(), r.Second.Where()} {
		if !seen[w] {
			s += "; " + w
			seen[w] = true
		}
	}
	return s
}
