package explain

import (
	"context"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// Point is the failure's probability after a prefix of the trace: of Runs
// continuations with the campaign's strategy (each with its own seed),
// Failed failed the same way.
type Point struct {
	Step   int `json:"step"` // the prefix's last step (0: nothing forced)
	Runs   int `json:"runs"`
	Failed int `json:"failed"`
}

// P is the point's failure probability.
func (p Point) P() float64 {
	if p.Runs == 0 {
		return 0
	}
	return float64(p.Failed) / float64(p.Runs)
}

// Jump is where the failure's probability rises most between two
// measured prefixes of the trace, bisected until they are one op apart
// when the budget allows: the op the longer prefix forces last is the
// decisive step, after which the failure is likelier by the most.
type Jump struct {
	// Step is the op's step in the trace and Op the op; FromStep the last
	// step of the shorter prefix (Step's predecessor when bisected to one
	// op).
	Step     int   `json:"step"`
	FromStep int   `json:"from_step"`
	Op       Event `json:"op"`
	// Ops is how many ops the longer prefix has more (1 once bisected).
	Ops int `json:"ops"`
	// From and To are the probabilities after the two prefixes.
	From Point `json:"from"`
	To   Point `json:"to"`
	// Race is the race (1-based) whose decision that op is (an injection)
	// or overtook (a hold), 0 if none.
	Race int `json:"race,omitempty"`
	// Clear says the rise is more than the noise of the points' runs
	// (twice its standard error): else it is only the largest rise.
	Clear bool `json:"clear"`
}

// curve measures the failure probability after prefixes of recs: first at
// six evenly spaced lengths (none and all included), then by bisection of
// the largest rise until its two prefixes are one op apart (the jump),
// then of the other rises, until about ten points or the budget.
func (e *explainer) curve(ctx context.Context, recs []sched.Record, strategy string, runs int) ([]Point, *Jump, error) {
	c := &curveRun{e: e, recs: recs, strategy: strategy, runs: runs, done: map[int]Point{}}
	n := len(recs)
	var err error
	for i := 0; i <= 5 && err == nil; i++ {
		err = c.measure(ctx, i*n/5)
	}
	// The jump: a rise from one op to the next needs log2(n/5) bisections;
	// the cap leaves room for the largest rise moving as points come.
	for limit := 10 + 2*bits.Len(uint(n)); err == nil && len(c.done) < limit; {
		lo, hi, d := c.rise(1)
		if d <= 0 || hi-lo < 2 {
			break
		}
		err = c.measure(ctx, (lo+hi)/2)
	}
	for err == nil && len(c.done) < 10 {
		lo, hi, d := c.rise(2)
		if d <= 0 {
			break
		}
		err = c.measure(ctx, (lo+hi)/2)
	}
	var out []Point
	for _, k := range sortedKeys(c.done) {
		out = append(out, c.done[k])
	}
	var j *Jump
	if lo, hi, d := c.rise(1); d > 0 {
		j = &Jump{Step: recs[hi-1].Step, Ops: hi - lo, From: c.done[lo], To: c.done[hi], Clear: clearRise(c.done[lo], c.done[hi])}
		if lo > 0 {
			j.FromStep = recs[lo-1].Step
		}
	}
	return out, j, err
}

// curveRun is one curve's measurements: the points by prefix length.
type curveRun struct {
	e        *explainer
	recs     []sched.Record
	strategy string
	runs     int
	done     map[int]Point
}

// measure runs the continuations of the prefix of length k, each a
// sched.Branch: the prefix forced, then the strategy with a seed of its
// own, and at the fork (where the prefix ends) the engine draws the
// faults and delays still in the plan's budget afresh, over what is left
// of their windows, as a campaign's trial would. The recorded run's later
// faults are not kept: forced, a fault the trace took after the prefix
// would fail every continuation, and the curve would not move.
func (c *curveRun) measure(ctx context.Context, k int) error {
	if _, ok := c.done[k]; ok {
		return nil
	}
	pt := Point{Step: 0}
	if k > 0 {
		pt.Step = c.recs[k-1].Step
	}
	for s := 0; s < c.runs; s++ {
		then, err := sched.New(c.strategy, sched.Params{})
		if err != nil {
			return err
		}
		res, err := c.e.runWith(ctx, &sched.Branch{Prefix: c.recs[:k], Then: then, Seed: int64(s)*7919 + 1, Faults: faults.ReplayOf}, false)
		if err != nil {
			if pt.Runs > 0 {
				c.done[k] = pt
			}
			return err
		}
		pt.Runs++
		if failureOf(res).is(c.e.want) {
			pt.Failed++
		}
	}
	c.done[k] = pt
	return nil
}

// rise is the two measured prefixes next to each other, at least gap ops
// apart, between which the probability rises most (the later of equal
// rises: nearer where the failure is settled), and that rise.
func (c *curveRun) rise(gap int) (lo, hi int, d float64) {
	ks := sortedKeys(c.done)
	for i := 0; i+1 < len(ks); i++ {
		if ks[i+1]-ks[i] < gap {
			continue
		}
		if r := c.done[ks[i+1]].P() - c.done[ks[i]].P(); r > 0 && r >= d {
			lo, hi, d = ks[i], ks[i+1], r
		}
	}
	return lo, hi, d
}

// jumpRace is the race (1-based) whose decision the op at the trace's
// step is, 0 if none: an injection at that step, or a hold whose op that
// step overtook (from the step it was first passed over to its release).
func jumpRace(races []Race, step int) int {
	// An injection at the step first: a hold's stretch may span it.
	for i, r := range races {
		if d := r.Decision; d.Kind == sched.InjectDecision && d.Step == step {
			return i + 1
		}
	}
	for i, r := range races {
		if d := r.Decision; d.Kind == sched.HoldDecision && step >= d.First && (d.Step == 0 || step < d.Step) {
			return i + 1
		}
	}
	return 0
}

// clearRise says whether a rise from a to b is more than twice its standard
// error (the two proportions pooled): with ten runs a point, 3/10 to 6/10
// is noise, 2/10 to 10/10 a jump.
func clearRise(a, b Point) bool {
	if a.Runs == 0 || b.Runs == 0 {
		return false
	}
	p := float64(a.Failed+b.Failed) / float64(a.Runs+b.Runs)
	se := math.Sqrt(p * (1 - p) * (1/float64(a.Runs) + 1/float64(b.Runs)))
	return b.P()-a.P() > 2*se
}

func sortedKeys(m map[int]Point) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// Sparkline draws probabilities as block characters, lowest to highest.
func Sparkline(pts []Point) string {
	const bars = "▁▂▃▄▅▆▇█"
	runes := []rune(bars)
	var b strings.Builder
	for _, p := range pts {
		b.WriteRune(runes[min(int(p.P()*float64(len(runes)-1)+0.5), len(runes)-1)])
	}
	return b.String()
}
