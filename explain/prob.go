package explain

import (
	"context"
	"sort"
	"strings"
	"time"

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

// prefix replays the first k records of a trace, then leaves every choice
// to another strategy, reset with a seed of its own.
type prefix struct {
	recs []sched.Record
	i    int
	then sched.Strategy
	seed int64
	// recalled is the record the last Next matched (sched.Recaller): a
	// probe-aimed fault of the prefix is aimed with its recorded answer.
	recalled *sched.Op
}

// Recalled is the record the last Next matched; nil past the prefix.
func (p *prefix) Recalled() *sched.Op { return p.recalled }

func (p *prefix) Name() string { return "prefix+" + p.then.Name() }

func (p *prefix) Reset(_ int64, hint int) {
	p.i, p.recalled = 0, nil
	p.then.Reset(p.seed, hint)
}

// want is the next recorded op, nil once the prefix is done.
func (p *prefix) want() *sched.Op {
	for p.i < len(p.recs) && p.recs[p.i].Auto {
		p.i++
	}
	if p.i >= len(p.recs) {
		return nil
	}
	return &p.recs[p.i].Op
}

func (p *prefix) Extra(now time.Duration, choices []*sched.Op) []*sched.Op {
	w := p.want()
	if w == nil || !(w.Kind == sched.Advance || w.Kind.IsFault()) {
		return nil
	}
	for _, o := range choices {
		if sameOp(o, w) {
			return nil
		}
	}
	// A fault is made up as a replay would (faults.ReplayOf): only a kind
	// that needs nothing the engine alone knows is there.
	if w.Kind == sched.Advance && time.Duration(w.At) <= now || w.Kind.IsFault() && !faults.ReplayOf(w.Kind).Remake {
		return nil
	}
	o := *w
	if o.Kind == sched.Advance {
		o.Delay = o.At - int64(now)
	}
	return []*sched.Op{&o}
}

func (p *prefix) Next(enabled []*sched.Op) (int, error) {
	p.recalled = nil
	if w := p.want(); w != nil {
		p.i++
		for i, o := range enabled {
			if sameOp(o, w) {
				p.recalled = w
				return i, nil
			}
		}
		// Diverged: the rest is the strategy's.
		p.recs = nil
	}
	return p.then.Next(enabled)
}

// sameOp is replay's identity: the same process, kind, call site, object,
// syscall and target.
func sameOp(a, b *sched.Op) bool {
	return sched.SameOnProcess(a, b) && (a.Kind != faults.Pause || a.Delay == b.Delay)
}

// curve measures the failure probability after prefixes of recs: first at
// six evenly spaced lengths (none and all included), then by bisection
// where the probability jumps most, until about ten points or the budget.
func (e *explainer) curve(ctx context.Context, recs []sched.Record, strategy string, runs int) ([]Point, error) {
	n := len(recs)
	done := map[int]Point{}
	measure := func(k int) error {
		if _, ok := done[k]; ok {
			return nil
		}
		pt := Point{Step: 0}
		if k > 0 {
			pt.Step = recs[k-1].Step
		}
		for s := 0; s < runs; s++ {
			then, err := sched.New(strategy, sched.Params{})
			if err != nil {
				return err
			}
			if time.Now().After(e.deadline) {
				if pt.Runs > 0 {
					done[k] = pt
				}
				return errBudget
			}
			res, err := e.rr.Run(ctx, &prefix{recs: recs[:k], then: then, seed: int64(s)*7919 + 1}, false)
			if err != nil {
				return err
			}
			e.runs++
			pt.Runs++
			if failureOf(res) == e.want {
				pt.Failed++
			}
		}
		done[k] = pt
		return nil
	}
	var err error
	for i := 0; i <= 5 && err == nil; i++ {
		err = measure(i * n / 5)
	}
	for len(done) < 10 && err == nil {
		ks := sortedKeys(done)
		best, jump := -1, 0.0
		for i := 0; i+1 < len(ks); i++ {
			if ks[i+1]-ks[i] < 2 {
				continue
			}
			if d := done[ks[i+1]].P() - done[ks[i]].P(); d > jump {
				best, jump = i, d
			}
		}
		if best < 0 {
			break
		}
		err = measure((ks[best] + ks[best+1]) / 2)
	}
	var out []Point
	for _, k := range sortedKeys(done) {
		out = append(out, done[k])
	}
	return out, err
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
