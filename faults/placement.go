package faults

import (
	"math/rand/v2"
	"slices"
	"time"
)

// By is what a budget's triggers are drawn over (spec faults.spread and
// time.spread).
type By uint8

const (
	// ByBoth draws each trigger over the window's virtual time or over
	// its expected steps, with even odds: time finds the moments a
	// program waits for (a lease, a timeout), steps the bursts of ops at
	// one virtual instant, which a time trigger never lands in.
	ByBoth By = iota
	// ByTime draws every trigger over the window's virtual time.
	ByTime
	// BySteps draws every trigger over the window's expected steps.
	BySteps
)

var byNames = [...]string{ByBoth: "either", ByTime: "time", BySteps: "steps"}

func (b By) String() string { return byNames[b] }

// ParseBy is the inverse of By.String.
func ParseBy(s string) (By, bool) {
	for b, n := range byNames {
		if n == s {
			return By(b), true
		}
	}
	return ByBoth, false
}

// stepStream keeps the step triggers' draws apart from the time
// triggers', so that a budget placed by time alone draws the same times
// as it did before step triggers existed.
const stepStream = 0x7374657073 // "steps"

// Placer places a budget of ops (a plan's injections, a trial's delays)
// over a window: each gets a trigger drawn from the seed, a virtual time
// in [from, until) or a step of the window, counted from the step at which
// the clock first stood in it, drawn over the steps the campaign expects
// the window to hold (learned from its trial 0, see engine's Run, and
// written in every trace's header, so a replay needs no other trial). An
// op of the budget may be offered while one of its triggers has fired;
// choosing it consumes that trigger. The expected steps vary with the
// schedule, so a step trigger may lie past a trial's window: that op is
// not placed.
type Placer struct {
	from, until time.Duration
	times       []time.Duration // pending time triggers, sorted
	steps       []int           // pending step triggers, sorted
	open, close int             // steps at which the clock reached from and until; -1 before
	by          By
	expect      int
}

// NewPlacer draws n triggers over [from, until) from the seed's streams
// stream (times) and stepStream^stream (steps): by decides over what;
// expect is the steps the window is expected to hold, 0 when unknown (a
// campaign's trial 0), which leaves every trigger a time.
func NewPlacer(n int, from, until time.Duration, by By, expect int, seed int64, stream uint64) *Placer {
	p := &Placer{from: from, until: until, open: -1, close: -1, by: by, expect: expect}
	times := Triggers(n, from, until, seed, stream)
	if expect <= 0 || by == ByTime {
		p.times = times
		return p
	}
	r := rand.New(rand.NewPCG(uint64(seed), stream^stepStream))
	for _, at := range times {
		if by == BySteps || r.IntN(2) == 1 {
			p.steps = append(p.steps, r.IntN(expect))
		} else {
			p.times = append(p.times, at)
		}
	}
	slices.Sort(p.steps)
	return p
}

// Triggers draws n virtual times uniformly in [from, until) from a stream
// of the seed of its own (stream), sorted. Offered from the window's
// start, an op is taken within a few steps by every priority-based
// strategy (its priority soon beats the ops around it), so every fault
// would land at the start of its window; a trigger spreads them over it
// whatever the strategy. Times are whole microseconds, so traces show them
// plainly.
func Triggers(n int, from, until time.Duration, seed int64, stream uint64) []time.Duration {
	if n <= 0 || until <= from {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), stream))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = (from + time.Duration(r.Int64N(int64(until-from)))).Truncate(time.Microsecond)
		out[i] = max(out[i], from)
	}
	slices.Sort(out)
	return out
}

// Observe notes the trial's step count at now: the window opens at the
// first step the clock stands in it, and closes at the first it has
// passed it. Call it at every decision, before Due.
// forkStream keeps a fork's draws (Redraw) apart from the first ones.
const forkStream = 0x666f726b // "fork"

// Redraw draws the pending triggers again from seed, over what is left of
// the window at now and step: a forked run (an exploring campaign's
// branch) places the injections or delays it has not made anew. A trigger
// that was a step stays one only while the window is expected to hold
// more steps than it has.
func (p *Placer) Redraw(seed int64, stream uint64, now time.Duration, step int) {
	n := len(p.times) + len(p.steps)
	times := Triggers(n, max(now, p.from), p.until, seed, stream^forkStream)
	p.times, p.steps = nil, nil
	r := rand.New(rand.NewPCG(uint64(seed), stream^forkStream^stepStream))
	cur := 0
	if p.open >= 0 {
		cur = step - p.open
	}
	for _, at := range times {
		if p.expect > cur && p.by != ByTime && (p.by == BySteps || r.IntN(2) == 1) {
			p.steps = append(p.steps, cur+r.IntN(p.expect-cur))
		} else {
			p.times = append(p.times, at)
		}
	}
	slices.Sort(p.steps)
}

func (p *Placer) Observe(now time.Duration, step int) {
	if p.open < 0 && now >= p.from {
		p.open = step
	}
	if p.close < 0 && now >= p.until {
		p.close = step
	}
}

// Due reports whether a trigger has fired at now and step.
func (p *Placer) Due(now time.Duration, step int) bool {
	return p.dueTime(now) || p.dueStep(step)
}

func (p *Placer) dueTime(now time.Duration) bool { return len(p.times) > 0 && p.times[0] <= now }

func (p *Placer) dueStep(step int) bool {
	return p.open >= 0 && len(p.steps) > 0 && step-p.open >= p.steps[0]
}

// Take consumes the trigger of an op of the budget chosen at now and
// step, and returns its kind, "time" or "step": a fired one (a time's
// first), or, for an op forced without one (explain's decisions), the
// first pending.
func (p *Placer) Take(now time.Duration, step int) string {
	switch {
	case p.dueTime(now):
		p.times = p.times[1:]
	case p.dueStep(step):
		p.steps = p.steps[1:]
		return "step"
	case len(p.times) > 0:
		p.times = p.times[1:]
	case len(p.steps) > 0:
		p.steps = p.steps[1:]
		return "step"
	default:
		return ""
	}
	return "time"
}

// Next is the earliest time trigger after now, a deadline the clock may
// jump to when nothing else can run (a step trigger fires only while ops
// run).
func (p *Placer) Next(now time.Duration) (time.Duration, bool) {
	for _, at := range p.times {
		if at > now {
			return at, true
		}
	}
	return 0, false
}

// Steps is how many steps the window held up to step: from its opening to
// its close, or to step while it is still open; 0 when it never opened.
// A campaign's trial 0 measures it for the others' step triggers.
func (p *Placer) Steps(step int) int {
	switch {
	case p.open < 0:
		return 0
	case p.close >= 0:
		return p.close - p.open
	}
	return step - p.open
}

// Pending lists the triggers not yet consumed: times, then steps (for
// tests and logs).
func (p *Placer) Pending() ([]time.Duration, []int) { return p.times, p.steps }
