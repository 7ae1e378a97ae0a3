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
			res, err := e.rr.Run(ctx, &sched.Branch{Prefix: recs[:k], Then: then, Seed: int64(s)*7919 + 1, Faults: faults.ReplayOf}, false)
			if err != nil {
				return err
			}
			e.runs++
			pt.Runs++
			if failureOf(res).is(e.want) {
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
