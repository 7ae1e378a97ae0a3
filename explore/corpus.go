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
	// Picks is how many trials have branched from it so far.
	Picks int
	// decisions are the indices in Records of the ops a strategy chose
	// (not Auto); novel is how many of them a prefix must hold to hold
	// NovelAt's record (-1: unknown).
	decisions []int
	novel     int
}

// Counter says how many trials of the campaign showed a feature, by
// coverage ID (coverage.Coverage.CountOf).
type Counter func(id int) int

// Corpus is an exploring campaign's kept trials.
type Corpus struct {
	entries []*Entry
	byTrial map[int]*Entry
	// Max bounds the corpus: past it, the entry with the least energy
	// leaves.
	Max int
}

// DefaultMax is the corpus size New keeps.
const DefaultMax = 256

// New makes an empty corpus.
func New() *Corpus { return &Corpus{byTrial: map[int]*Entry{}, Max: DefaultMax} }

// Len is how many trials the corpus keeps.
func (c *Corpus) Len() int { return len(c.entries) }

// Add considers a finished trial, in trial order: it joins the corpus when
// it showed a feature first (novel > 0). parent is the trial it branched
// from (-1: a fresh draw), whose picks it counts. count gives the features'
// counts for the energy that decides which entry leaves a full corpus.
func (c *Corpus) Add(e *Entry, parent int, count Counter) bool {
	if p := c.byTrial[parent]; p != nil {
		p.Picks++
	}
	if e.Novel == 0 {
		return false
	}
	e.novel = -1
	for i, r := range e.Records {
		if !r.Auto {
			e.decisions = append(e.decisions, i)
		}
		if i == e.NovelAt {
			e.novel = len(e.decisions)
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
}

// Freeze takes the view the next generation draws its plans from.
func (c *Corpus) Freeze(count Counter) *View {
	v := &View{entries: slices.Clone(c.entries)}
	for _, e := range v.entries {
		en := energy(e, count)
		v.energy = append(v.energy, en)
		v.total += en
	}
	return v
}

// Len is how many entries the view holds.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	return len(v.entries)
}

// FreshShare is the share of an exploring campaign's trials drawn fresh
// (POS with the trial's own seed) once the corpus holds something: new
// starting points beside the branches of kept ones.
const FreshShare = 0.2

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

// Plan draws what the trial with this seed runs: fresh with FreshShare's
// odds (always while the view is empty), else a branch of an entry drawn
// in proportion to its energy, at a decision drawn uniformly, with one of
// the changes that can apply there.
func (v *View) Plan(seed int64, fr sched.FaultReplays) Plan {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6578706c6f7265)) // "explore"
	if v.Len() == 0 || r.Float64() < FreshShare || v.total <= 0 {
		return Plan{}
	}
	x := r.Float64() * v.total
	i := 0
	for ; i < len(v.entries)-1; i++ {
		if x < v.energy[i] {
			break
		}
		x -= v.energy[i]
	}
	e := v.entries[i]
	p := Plan{Parent: e, Prefix: r.IntN(len(e.decisions) + 1)}
	if e.novel >= 0 && r.IntN(3) > 0 {
		// Mostly past what it showed first: keep it, and vary what
		// follows.
		p.Prefix = e.novel + r.IntN(len(e.decisions)-e.novel+1)
	}
	changes := []sched.Change{sched.Extend, sched.Flip, sched.Early, sched.Late}
	if k, ok := e.nextFault(p.Prefix, fr); ok {
		changes = append(changes, sched.Drop)
		p.Fault = k
	}
	p.Change = changes[r.IntN(len(changes))]
	if p.Change == sched.Late {
		p.Wait = 1 + r.IntN(max(8, len(e.decisions)/8))
	}
	return p
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
