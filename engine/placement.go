package engine

import (
	"math/rand/v2"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
)

// delayStream keeps the delays' triggers apart from the timing's own draws
// (which deadline a delay targets), so that placing them changes nothing
// else a seed fixes.
const delayStream = 0x64656c617973 // "delays"

// place spreads the trial's delays over the window [from, until) (spec
// time.from, time.until): the next delay is offered only once one of the
// triggers drawn from the seed has fired, a virtual time or a step of the
// window over the expect steps it is expected to hold, as by says
// (faults.Placer). Without an end (until 0) delays are offered from from
// on.
func (t *timing) place(from, until time.Duration, by faults.By, expect int, seed int64) {
	t.from = from
	if until > from {
		t.placer = faults.NewPlacer(t.budget, from, until, by, expect, seed, delayStream)
	}
}

// reseed draws the rest of the trial's delays from seed (a forked run):
// their targets, and the triggers of those not yet made.
func (t *timing) reseed(seed int64) {
	t.r = rand.New(rand.NewPCG(uint64(seed), timingStream))
	if t.placer != nil {
		t.placer.Redraw(seed, delayStream, t.now, t.step)
	}
}

// observe notes the trial's step count at now, before due.
func (t *timing) observe(now time.Duration, step int) {
	t.now, t.step = now, step
	if t.placer != nil {
		t.placer.Observe(now, step)
	}
}

// due says whether the next delay of the budget may be offered at now.
func (t *timing) due(now time.Duration) bool {
	if t.placer != nil {
		return t.placer.Due(now, t.step)
	}
	return now >= t.from
}

// windowSteps is how many steps the delay window held up to step.
func (t *timing) windowSteps(step int) int {
	if t.placer == nil {
		return 0
	}
	return t.placer.Steps(step)
}

// Windows are the steps a trial's fault and delay windows held (or are
// expected to hold).
type Windows = result.Windows

// headerWindows are the expected windows a trace's trial drew its step
// triggers over.
func headerWindows(h sched.Header) Windows {
	return Windows{Faults: h.FaultSteps, Delays: h.DelaySteps}
}
