package coverage

import (
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/sched"
)

// Window is how many of the distinct features that follow one at a node
// an ordering pairs it with. A node's timeline interleaves many streams
// (heartbeats run through everything), so pairs of neighbours alone would
// mostly pair a message with a heartbeat, and a heartbeat slipping in
// between would hide the pair that matters; all pairs would grow with the
// square of a trial's length and be almost all true (everything follows
// the first heartbeat). The next few distinct features, once repeats are
// collapsed, keep what followed what shortly, linear in the trial.
const Window = 4

// event is one feature at one node: a message received ("<" and its
// kind's key) or sent (">"), or a line printed ("@" and its template),
// with the faults in force then.
type event struct {
	elem  string
	fault string
	rec   int // the trace record it was at (-1: a line)
}

// orderings pairs each event of a node's timeline with the next Window
// distinct events after it (repeats of one event in a row are one), each
// pair with the faults in force at the later event.
func orderings(timeline []event, window int, add func(a, b event)) {
	var seq []event
	for _, e := range timeline {
		if n := len(seq); n > 0 && seq[n-1].elem == e.elem {
			continue
		}
		seq = append(seq, e)
	}
	for i, a := range seq {
		seen := make([]string, 0, window)
		for _, b := range seq[i+1:] {
			if len(seen) == window {
				break
			}
			if b.elem == a.elem || slices.Contains(seen, b.elem) {
				continue
			}
			seen = append(seen, b.elem)
			add(a, b)
		}
	}
}

// faultsInForce says, for each record of a trace, the kinds of the
// faults in force when it ran ("" for none, "crash+partition" for
// several): a fault is in force from its record until a recovery (restart,
// heal) of its target, and to the end of the trial when no recovery
// follows it (a pause, a hold, a clock jump, a reset, a corruption: the
// trial is from then on one that has seen it). A recovery itself is in
// force at no record. Which kinds are recoveries is package faults' to
// say, through fr (faults.ReplayOf), as for a replay: with nil, none is,
// and every fault stays in force.
func faultsInForce(tr *sched.Trace, fr sched.FaultReplays) []string {
	out := make([]string, len(tr.Records))
	var on []*sched.Op
	cur := ""
	for i := range tr.Records {
		r := &tr.Records[i]
		if k := r.Op.Kind; k.IsFault() {
			if fr != nil && fr(k).Recovery {
				on = slices.DeleteFunc(on, func(f *sched.Op) bool { return recovers(&r.Op, f) })
			} else {
				on = append(on, &r.Op)
			}
			kinds := make([]string, 0, len(on))
			for _, f := range on {
				kinds = append(kinds, f.Kind.String())
			}
			slices.Sort(kinds)
			cur = strings.Join(slices.Compact(kinds), "+")
		}
		out[i] = cur
	}
	return out
}

// recovers says whether recovery rec ends fault f: it names f's object or
// node, or a group of nodes f's node is in (a partition of n1 drawn with
// its group n1,c1 is healed as "n1,c1").
func recovers(rec, f *sched.Op) bool {
	if rec.Object != "" && rec.Object == f.Object {
		return true
	}
	return f.Node != "" && slices.Contains(strings.Split(rec.Node, ","), f.Node)
}
