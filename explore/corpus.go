package explore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lockstep-dev/lockstep/sched"
)

// Entry is a trial the corpus keeps: the features it showed (by their
// coverage IDs) and what it takes to run it again.
type Entry struct {
	// Trial is its index in the campaign; Seed the seed its run used (its
	// nodes' randomness, its fault and delay draws), which a branch of it
	// runs with again so that its prefix replays.
	Trial int
	Seed  int64
	// Records are its trace's records: a branch forces a prefix of them.
	Records []sched.Record
	// Features are the coverage IDs of every feature it showed; Novel how
	// many it showed first.
	Features []int
	Novel    int
	// NovelAt is the index in Records of the first record at which it
	// showed a feature first (-1: only its lines did, which carry no
	// step).
	NovelAt int
	// Goal is how many lines of the campaign's symptom it printed in
	// order (run --symptom), GoalAt how many records it had when it
	// printed the last of them.
	Goal, GoalAt int
	// Picks is how many trials have branched from it so far.
	Picks int
	// decisions are the indices in Records of the ops a strategy chose
	// (not Auto); novel is how many of them a prefix must hold to hold
	// NovelAt's record (-1: unknown).
	decisions []int
	novel     int
	goal      int // decisions before GoalAt's point (-1: no goal)
}

// Counter says how many trials of the campaign showed a feature, by
// coverage ID (coverage.Coverage.CountOf).
type Counter func(id int) int

// Corpus is an exploring campaign's kept trials, and how often each way
// of making a trial (an Arm) showed something new.
type Corpus struct {
	entries []*Entry
	byTrial map[int]*Entry
	arms    []armStats // by Arm
	// bestGoal is the most lines of the symptom a trial printed in order.
	bestGoal int
	// Max bounds the corpus: past it, the entry with the least energy
	// leaves.
	Max int
}

// DefaultMax is the corpus size New keeps.
const DefaultMax = 256

// Arm is a way of making a trial: a fresh draw, or a branch with one of
// the changes.
type Arm uint8

// Fresh is the arm of fresh draws; a branch's arm is 1 + its change.
const Fresh Arm = 0

// Arms are every arm, fresh first.
func Arms() []Arm {
	out := []Arm{Fresh}
	for _, c := range sched.Changes() {
		out = append(out, Arm(1+c))
	}
	return out
}

// ArmOf is the arm a plan used.
func ArmOf(p Plan) Arm {
	if p.Parent == nil {
		return Fresh
	}
	return Arm(1 + int(p.Change))
}

func (a Arm) String() string {
	if a == Fresh {
		return "fresh"
	}
	return sched.Change(a - 1).String()
}

// armStats are an arm's trials and those that showed a feature first.
type armStats struct{ trials, novel int }

// New makes an empty corpus.
func New() *Corpus {
	return &Corpus{byTrial: map[int]*Entry{}, Max: DefaultMax, arms: make([]armStats, len(Arms()))}
}

// Len is how many trials the corpus keeps.
func (c *Corpus) Len() int { return len(c.entries) }

// Add considers a finished trial, in trial order: it joins the corpus when
// it showed a feature first (novel > 0). plan is what it ran: its arm is
// credited with what it showed, its parent's picks counted. count gives
// the features' counts for the energy that decides which entry leaves a
// full corpus.
func (c *Corpus) Add(e *Entry, plan Plan, count Counter) bool {
	if plan.Parent != nil {
		if p := c.byTrial[plan.Parent.Trial]; p != nil {
			p.Picks++
		}
	}
	a := &c.arms[ArmOf(plan)]
	a.trials++
	if e.Novel > 0 {
		a.novel++
	}
	closer := e.Goal > c.bestGoal
	c.bestGoal = max(c.bestGoal, e.Goal)
	if e.Novel == 0 && !closer {
		return false
	}
	e.novel, e.goal = -1, -1
	for i, r := range e.Records {
		if !r.Auto {
			e.decisions = append(e.decisions, i)
		}
		if i == e.NovelAt {
			e.novel = len(e.decisions)
		}
	}
	if e.Goal > 0 {
		e.goal = 0
		for _, i := range e.decisions {
			if i < e.GoalAt {
				e.goal++
			}
		}
	}
	c.entries = append(c.entries, e)
	c.byTrial[e.Trial] = e
	if c.Max > 0 && len(c.entries) > c.Max {
		low := 0
		var lowE float64
		for i, x := range c.entries {
			if en := energy(x, count); i == 0 || en < lowE {
				low, lowE = i, en
			}
		}
		delete(c.byTrial, c.entries[low].Trial)
		c.entries = slices.Delete(c.entries, low, low+1)
	}
	return true
}

// energy is how much of the search an entry earns: the rarity of what it
// showed (each feature 1 over the trials that showed it), less the more
// it has been branched from already.
func energy(e *Entry, count Counter) float64 {
	var sum float64
	for _, id := range e.Features {
		sum += 1 / float64(max(1, count(id)))
	}
	return sum / math.Sqrt(float64(1+e.Picks))
}

// View is the corpus as one generation of trials sees it: its entries and
// their energies, frozen when the generation began, so that what a trial
// runs does not depend on which trials of its generation finished first.
type View struct {
	entries []*Entry
	energy  []float64
	total   float64
	// odds are each arm's share of the trials: its rate of novel trials
	// so far (with one of two as a prior), normalized.
	odds []float64
}

// Freeze takes the view the next generation draws its plans from.
func (c *Corpus) Freeze(count Counter) *View {
	v := &View{entries: slices.Clone(c.entries)}
	for _, e := range v.entries {
		en := energy(e, count)
		if c.bestGoal > 0 {
			// Steered to the symptom: each line short of the best match
			// quarters an entry's share.
			en *= math.Pow(4, float64(e.Goal-c.bestGoal))
		}
		v.energy = append(v.energy, en)
		v.total += en
	}
	var sum float64
	for _, a := range c.arms {
		rate := float64(a.novel+1) / float64(a.trials+2)
		v.odds = append(v.odds, rate)
		sum += rate
	}
	for i := range v.odds {
		v.odds[i] /= sum
	}
	// Fresh draws never fall below MinFresh: they are what finds what no
	// entry leads to, and what the campaign is worth when nothing does.
	if v.odds[Fresh] < MinFresh {
		rest := (1 - MinFresh) / (1 - v.odds[Fresh])
		for i := range v.odds {
			v.odds[i] *= rest
		}
		v.odds[Fresh] = MinFresh
	}
	return v
}

// Odds are the share of the next generation's trials each arm gets
// (Arms' order).
func (v *View) Odds() []float64 { return slices.Clone(v.odds) }

// Len is how many entries the view holds.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	return len(v.entries)
}

// MinFresh is the least share of an exploring campaign's trials drawn
// fresh (POS with the trial's own seed) once the corpus holds something.
const MinFresh = 0.2

// Plan is what one trial of an exploring campaign runs.
type Plan struct {
	// Parent is the entry branched from; nil for a fresh draw.
	Parent *Entry
	// Prefix is how many of the parent's decisions are forced.
	Prefix int
	Change sched.Change
	// Wait is Late's number of decisions, Fault Drop's kind.
	Wait  int
	Fault sched.Kind
}

func (p Plan) String() string {
	if p.Parent == nil {
		return "fresh"
	}
	s := fmt.Sprintf("trial %d to decision %d of %d, then %v", p.Parent.Trial, p.Prefix, len(p.Parent.decisions), p.Change)
	switch p.Change {
	case sched.Late:
		s += fmt.Sprintf(" %d", p.Wait)
	case sched.Drop:
		s += " " + p.Fault.String()
	}
	return s
}

// Plan draws what the trial with this seed runs: an arm by the odds
// (fresh always while the view is empty); for a branch, an entry drawn in
// proportion to its energy, and a decision, mostly past the record where
// it showed something first. A drop with no fault after the prefix
// extends instead.
func (v *View) Plan(seed int64, fr sched.FaultReplays) Plan {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6578706c6f7265)) // "explore"
	if v.Len() == 0 || v.total <= 0 {
		return Plan{}
	}
	arm := Arm(pick(r, v.odds))
	if arm == Fresh {
		return Plan{}
	}
	e := v.entries[pick(r, v.energy)]
	p := Plan{Parent: e, Prefix: r.IntN(len(e.decisions) + 1)}
	from := e.novel
	if e.goal >= 0 {
		from = e.goal // a symptom's: past the last line it matched
	}
	if from >= 0 && r.IntN(3) > 0 {
		// Mostly just past what it showed first: keep it, and vary what
		// follows it (a prefix that ran on would keep what followed too).
		p.Prefix = from + r.IntN(1+(len(e.decisions)-from)/4)
	}
	p.Change = sched.Change(arm - 1)
	switch p.Change {
	case sched.Late:
		p.Wait = 1 + r.IntN(max(8, len(e.decisions)/8))
	case sched.Drop:
		k, ok := e.nextFault(p.Prefix, fr)
		if !ok {
			p.Change = sched.Extend
		}
		p.Fault = k
	}
	return p
}

// pick draws an index with odds in proportion to the weights.
func pick(r *rand.Rand, weights []float64) int {
	var total float64
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// nextFault is the kind of the first injection the entry made at or after
// its decision d.
func (e *Entry) nextFault(d int, fr sched.FaultReplays) (sched.Kind, bool) {
	for _, i := range e.decisions[d:] {
		o := &e.Records[i].Op
		if o.Kind.IsFault() && (fr == nil || !fr(o.Kind).Recovery) {
			return o.Kind, true
		}
	}
	return sched.KindInvalid, false
}

// Branch is the strategy that runs a branch plan: the parent's first
// Prefix decisions forced, the change, then then (reset with seed).
func (p Plan) Branch(then sched.Strategy, seed int64, fr sched.FaultReplays) *sched.Branch {
	e := p.Parent
	end := len(e.Records)
	var next *sched.Op
	if p.Prefix < len(e.decisions) {
		end = e.decisions[p.Prefix]
		next = &e.Records[end].Op
	}
	return &sched.Branch{Prefix: e.Records[:end], Parent: next, Change: p.Change, Wait: p.Wait, Fault: p.Fault,
		Then: then, Seed: seed, Faults: fr}
}
