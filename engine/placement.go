package engine

import (
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/tracer"
)

// delayStream keeps the delays' triggers apart from the timing's own draws
// (which deadline a delay targets), so that placing them changes nothing
// else a seed fixes.
const delayStream = 0x64656c617973 // "delays"

// place spreads the trial's delays over the window [from, until) (spec
// time.from, time.until): the k-th delay is offered only once virtual time
// has passed its trigger, drawn from the seed (faults.Triggers). Without an
// end (until 0) delays are offered from from on.
func (t *timing) place(from, until time.Duration, seed int64) {
	t.from = from
	if until > from {
		t.triggers = faults.Triggers(t.budget, from, until, seed, delayStream)
	}
}

// due says whether the next delay of the budget may be offered at now.
func (t *timing) due(now time.Duration) bool {
	if t.spent < len(t.triggers) {
		return now >= t.triggers[t.spent]
	}
	return now >= t.from
}

// waitFor says, when nothing can run but fault ops are on offer, whether
// the clock should rather move to the next deadline: a fault whose trigger
// the clock reached in a lull is offered among the ops of the next burst
// (where messages are in flight and the strategy places it between them),
// not alone in the lull. Only when nothing else will ever run is it taken
// alone.
func (t *Trial) waitFor(st *tracer.State) bool {
	if _, ok := nextDeadline(st, len(st.Enabled) > 0); ok {
		return true
	}
	if _, ok := t.starts.next(); ok {
		return true
	}
	if _, ok := t.timing.holdEnd(t.clk.Now()); ok {
		return true
	}
	_, ok := t.faults.Deadline(t.clk.Now())
	return ok
}
