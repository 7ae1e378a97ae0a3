package explore

import (
	"math"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestSymptomWeights: a symptom line every trial printed weighs nothing,
// the rarest 1, the others in between by how many trials printed them.
func TestSymptomWeights(t *testing.T) {
	var s symptomStats
	// Four symptom lines over four trials: line 0 in every trial, line 1
	// in one, line 2 in two, line 3 in none.
	for _, hits := range [][]Hit{
		{{0, 1}, {1, 2}, {2, 3}},
		{{0, 1}, {2, 5}},
		{{0, 1}},
		{{0, 2}, {0, 7}},
	} {
		s.count(4, hits)
	}
	w := s.weights()
	want := []float64{0, math.Log(5.0/2) / math.Log(5), math.Log(5.0/3) / math.Log(5), 1}
	for i := range want {
		if math.Abs(w[i]-want[i]) > 1e-9 {
			t.Errorf("line %d weighs %.3f, want %.3f", i, w[i], want[i])
		}
	}
	var none symptomStats
	none.count(2, []Hit{{0, 1}, {1, 1}})
	for i, x := range none.weights() {
		if x != 0 {
			t.Errorf("line %d that every trial printed weighs %v", i, x)
		}
	}
}

// TestWeightedMatch: the heaviest in-order match, not the longest; the
// At of the hit that completed it first; one trial line (hits with the
// same At, the symptom's later line first) counts once.
func TestWeightedMatch(t *testing.T) {
	w := []float64{0.1, 0.1, 0.1, 1}
	for _, tc := range []struct {
		name  string
		hits  []Hit
		score float64
		at    int
	}{
		{"nothing", nil, 0, -1},
		{"the common lines in order", []Hit{{0, 1}, {1, 2}, {2, 3}}, 0.3, 3},
		{"the rare line alone beats them", []Hit{{3, 4}}, 1, 4},
		{"after the first two", []Hit{{0, 1}, {2, 2}, {3, 5}, {3, 9}}, 1.2, 5},
		{"out of order", []Hit{{3, 1}, {0, 2}}, 1, 1},
		{"one line as two", []Hit{{1, 6}, {0, 6}}, 0.1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			score, at := weightedMatch(tc.hits, w)
			if math.Abs(score-tc.score) > 1e-9 || at != tc.at {
				t.Errorf("weighs %.2f, completed at %d; want %.2f at %d", score, at, tc.score, tc.at)
			}
		})
	}
	if score, at := weightedMatch([]Hit{{0, 1}}, []float64{0, 1}); score != 0 || at != -1 {
		t.Errorf("a line of no weight matched: %.2f at %d", score, at)
	}
}

// TestSymptomSteers: a trial that printed a symptom line few trials
// printed joins the corpus and gets the branches, mostly past that line;
// one that printed more of the symptom's lines, but only those every
// trial prints, neither joins nor gets them.
func TestSymptomSteers(t *testing.T) {
	count := func(int) int { return 1 }
	c := New()
	c.SymptomLines = 4
	common := []Hit{{0, 2}, {1, 3}, {2, 4}}
	for i := range 6 {
		c.Add(&Entry{Trial: i, Records: records(100, -1), Features: []int{i}, Novel: 1, NovelAt: 10, Hits: common}, Plan{}, count)
	}
	if c.Add(&Entry{Trial: 6, Records: records(100, -1), Features: []int{0}, NovelAt: -1, Hits: common}, Plan{}, count) {
		t.Error("a trial that printed only the lines every trial prints came closer")
	}
	// Its feature is one no other entry holds, so its energy is theirs
	// (a feature shared is split among its holders).
	rare := &Entry{Trial: 7, Records: records(100, -1), Features: []int{7}, NovelAt: -1, Hits: []Hit{{0, 2}, {3, 60}}}
	if !c.Add(rare, Plan{}, count) {
		t.Fatal("a trial that printed a line no other trial printed did not join")
	}
	v := c.Freeze(count)
	from, past, branches := 0, 0, 0
	const n = 2000
	for seed := range int64(n) {
		p := v.Plan(seed, nil)
		if p.Parent == nil {
			continue
		}
		branches++
		if p.Parent != rare {
			continue
		}
		from++
		if p.Prefix >= 60 {
			past++
		}
	}
	// Its energy is the others' (features seen once, each by one entry); its match
	// weighs 1, theirs 0.11 (lines 1 and 2, which one trial of eight did
	// not print): each of the six others gets 4^-0.89 = 0.29 of its
	// share, so it gets 1/(1+6×0.29) = 0.37 of the branches.
	if share := float64(from) / float64(branches); share < 0.31 || share > 0.43 {
		t.Errorf("the trial with the rare line got %.2f of the branches, want about 0.37", share)
	}
	if past < from*3/5 {
		t.Errorf("%d of its %d branches keep its rare line, want about 3/4", past, from)
	}
}

// TestSteeredOdds: steered by a symptom, a fresh draw or a branch goes by
// how often each came nearer than every trial before it that matched
// anything (the first match counts for nothing): branches that come
// nearer keep the trials, branches that do not give them back to fresh
// draws; the changes share the branches as unsteered.
func TestSteeredOdds(t *testing.T) {
	count := func(int) int { return 1 }
	// Three symptom lines; every trial prints line 0, so it weighs
	// nothing, and some trials below print line 1, or lines 1 and 2
	// (rarer, so they weigh more).
	hits := func(n int) []Hit {
		h := []Hit{{0, 0}}
		for i := 1; i <= n; i++ {
			h = append(h, Hit{i, i})
		}
		return h
	}
	branch := Plan{Parent: &Entry{Trial: -1}, Change: sched.Flip}
	for _, tc := range []struct {
		name string
		// Lines past the first that each fresh draw and each branch
		// printed, in turn.
		fresh, branches []int
		nearer          armStats // the branches' (pooled: one arm here)
		freshUp         bool     // fresh draws' odds above one in two
	}{
		// A fresh draw matches first, a branch then prints more.
		{"branches come nearer", []int{0, 1, 0, 0}, []int{0, 2, 0, 0}, armStats{trials: 4, nearer: 1}, false},
		// A branch matches first, a fresh draw then prints more.
		{"fresh draws come nearer", []int{0, 2, 0, 0}, []int{1, 0, 0, 0}, armStats{trials: 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.SymptomLines = 3
			for i := range tc.fresh {
				c.Add(&Entry{Trial: 2 * i, Records: records(4, -1), Hits: hits(tc.fresh[i])}, Plan{}, count)
				c.Add(&Entry{Trial: 2*i + 1, Records: records(4, -1), Hits: hits(tc.branches[i])}, branch, count)
			}
			if got := c.arms[1+Arm(sched.Flip)]; got != tc.nearer {
				t.Errorf("branches %+v, want %+v", got, tc.nearer)
			}
			if n := c.arms[Fresh].nearer; n > 1 {
				t.Errorf("fresh draws came nearer %d times", n)
			}
			odds := c.Freeze(count).Odds()
			if up := odds[Fresh] > 0.5; up != tc.freshUp {
				t.Errorf("fresh odds %.3f", odds[Fresh])
			}
			sum := 0.0
			for _, o := range odds {
				sum += o
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("odds sum to %v", sum)
			}
		})
	}
}
