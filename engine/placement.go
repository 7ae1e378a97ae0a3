package engine

import (
	"time"

	"github.com/lockstep-dev/lockstep/faults"
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
