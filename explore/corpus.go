package explore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/internal/recent"
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
	// Once it is in a corpus, the corpus may pack them (MaxRecords): read
	// them with records.
	Records []sched.Record
	// Features are the coverage IDs of every feature it showed; Novel how
	// many it showed first.
	Features []int
	Novel    int
	// NovelAt is the index in Records of the first record at which it
	// showed a feature first (-1: only its lines did, which carry no
	// step).
	NovelAt int
	// Hits are its lines that are lines of the campaign's symptom (run
	// --symptom), in the order printed: how close it came to the symptom
	// is the weight of the symptom's lines they hold in order, each line
	// weighing more the fewer trials printed it.
	Hits []Hit
	// Goals are how close it came to each of the campaign's goals, the
	// spec's sometimes properties, in the engine's order.
	Goals []Approach
	// Picks is how many trials have branched from it so far.
	Picks int
	// Messages are the messages its trial delivered (or sent, when lost),
	// in record order, with their kinds: what Aim aims a hold at.
	Messages []Message
	// Races are its trial's races (conflict.Races), what Flip reverses;
	// the corpus counts their orders and keeps them as races.
	Races []Race
	races []race
	// decisions are the indices in Records of the ops a strategy chose
	// (not Auto); novel is how many of them a prefix must hold to hold
	// NovelAt's record (-1: unknown).
	decisions []int
	novel     int
	near      []int // per goal, decisions before its At
	kinds     []int // the kinds of its Messages, each once
	// nrecords is len(Records); faults are its decisions that were
	// faults, by their index in decisions, with their kinds: what a plan
	// reads of an entry whose records are packed.
	nrecords int
	faults   []decidedFault

	mu     sync.Mutex // Records, packed and used, once in a corpus
	packed []byte     // Records, gob-encoded and compressed, once packed
	used   int64      // clock when added or last branched from
	clock  *atomic.Int64
}

// Race is a race of a trial: the ops of records A and B conflicted, A
// released first. Order names that order by the two ops' signatures,
// Reverse the other (B before A). OneWay says the reverse cannot show as
// a race: A takes in what B brings (a recv and a delivery), so with B
// first the two are ordered.
type Race struct {
	A, B           int
	Order, Reverse string
	OneWay         bool
}

// race is a Race as an entry keeps it: its records, and its order and
// its reversed order by the corpus's IDs of them (rev -1: one way).
type race struct{ a, b, order, rev int32 }

// decidedFault is a fault an entry's trial injected (or recovered from)
// at its decision d, and how long it lasted (its Op.Delay), unless a
// strategy made it up (made: its record says what it aims at).
type decidedFault struct {
	d     int
	kind  sched.Kind
	delay time.Duration
	made  bool
}

// Message is one message of an entry's trial (coverage.Message): its
// record, its link, its kind by coverage ID, shape and label, and whether
// it was a UDP datagram (which a drop may lose).
type Message struct {
	Record       int
	From, To     string
	Kind         int
	Shape, Label string
	Datagram     bool
}

// Aiming is what the campaign lets the Aim change do: hold (Hold) or
// slow (Slow) one kind of message on one link with an end among Nodes (or
// on every link into or out of a node), make a node among them gray one
// way (Gray), or lose one datagram of a kind on one link (Drop); a hold, a
// gray or each slowed message for up to MaxHold, a slow for MinOutage (0:
// a tenth of MaxOutage) to MaxOutage, while the trial's Budget of
// injections has room. The zero Aiming (a fault plan without holds, slow
// links, grays or drops) turns the arm off.
type Aiming struct {
	Nodes                  []string
	Hold, Slow, Gray, Drop bool
	MaxHold                time.Duration
	MaxOutage, MinOutage   time.Duration
	Budget                 int
}

// On says whether the Aim arm is on: off, it gets no trials, and the
// other arms' odds are what they were without it.
func (a Aiming) On() bool {
	if a.Budget <= 0 || len(a.Nodes) == 0 {
		return false
	}
	return a.Drop || (a.Hold || a.Gray || a.Slow && a.MaxOutage > 0) && a.MaxHold > 0
}

// AimAt is the fault an Aim plan injects: the messages of one kind (by
// coverage ID, shape and label) from one node to another, held for Hold,
// or with Slow each delayed by Hold for While. One end may be
// sched.AnyNode: the kind on every link into To, or out of From. With
// Gray, every message into To (From is sched.AnyNode) or out of From is
// held for Hold but the kind that way is most of, made just before a
// message of the kind Kind names.
//
// With Drop, a datagram of that kind from From to To is lost instead: the
// one in flight where the prefix ends (just before the parent's trial
// first delivered one), or, armed, the next one sent.
type AimAt struct {
	From, To         string
	Kind             int
	Shape, Label     string
	Hold             time.Duration
	Slow, Gray, Drop bool
	While            time.Duration
}

func (a AimAt) String() string {
	if a.Drop {
		return fmt.Sprintf("drop %s %s>%s", a.Label, a.From, a.To)
	}
	if a.Gray {
		return fmt.Sprintf("gray %s>%s from before %s for %v", a.From, a.To, a.Label, a.Hold)
	}
	if a.Slow {
		return fmt.Sprintf("slow %s %s>%s by %v for %v", a.Label, a.From, a.To, a.Hold, a.While)
	}
	return fmt.Sprintf("%s %s>%s for %v", a.Label, a.From, a.To, a.Hold)
}

// Approach is how close a trial came to a goal (a sometimes property):
// whether a line of it matched the goal's pattern, else the most of its
// words one of its lines held in order (coverage.Near) and how many
// records the trial had when it printed the first such line.
type Approach struct {
	Reached   bool
	Words, At int
}

// Counter says how many trials of the campaign showed a feature, by
// coverage ID (coverage.Coverage.CountOf).
type Counter func(id int) int

// Corpus is an exploring campaign's kept trials, and how often each way
// of making a trial (an Arm) showed something new.
type Corpus struct {
	entries []*Entry
	byTrial map[int]*Entry
	// orders names each race order the trials showed (Race.Order) by
	// an ID; orderSeen counts the trials that showed each.
	orders    map[string]int32
	orderSeen []int32
	arms      []armStats // by Arm
	// SymptomLines is how many lines the campaign's symptom has (0:
	// none); symptom what the trials so far say of them.
	SymptomLines int
	symptom      symptomStats
	// goals are the campaign's sometimes properties as goals.
	goals []goalState
	// Max bounds the corpus: past it, the entry with the least energy
	// leaves.
	Max int
	// MaxRecords bounds the records the entries hold unpacked (0: no
	// bound); past it, those used least recently are packed.
	MaxRecords int
	clock      atomic.Int64
	// Aiming is what the Aim change may do (zero: nothing).
	Aiming Aiming
	// Lasts are the fault kinds the Longer change may make last longer,
	// each with the longest the plan allows (faults.Plan.Lasts); empty,
	// the arm is off.
	Lasts map[sched.Kind]time.Duration
	// ClassOf is the class of a feature, by coverage ID (the engine's
	// coverage.Coverage.ClassOf): each class holds an equal share of the
	// energy. Nil: one class.
	ClassOf func(id int) int
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

// goalState is how close the campaign came to one of its goals: the most
// words of it a trial's line held (best), and whether a trial reached it,
// which ends it as a goal.
type goalState struct {
	best int
	done bool
}

// armStats are an arm's trials, those that showed a feature first, and
// those that came nearer the symptom or an open goal than every trial
// before them that matched anything (nearer).
type armStats struct{ trials, novel, nearer int }

// New makes an empty corpus.
func New() *Corpus {
	return &Corpus{byTrial: map[int]*Entry{}, Max: DefaultMax, MaxRecords: DefaultMaxRecords, arms: make([]armStats, len(Arms()))}
}

// Len is how many trials the corpus keeps.
func (c *Corpus) Len() int { return len(c.entries) }

// Add considers a finished trial, in trial order: it joins the corpus when
// it showed a feature first (novel > 0), or came closer to the symptom or
// to an open goal than any trial before it. plan is what it ran: its arm is
// credited with what it showed, its parent's picks counted. count gives
// the features' counts for the energy that decides which entry leaves a
// full corpus.
func (c *Corpus) Add(e *Entry, plan Plan, count Counter) bool {
	// Kept or not, a trial counted ends a branch that may have unpacked
	// its parent.
	defer c.packOld()
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
	races := c.countRaces(e)
	closer, nearer := c.closerToSymptom(e)
	if gc, gn := c.approach(e.Goals); gc {
		closer = true
		nearer = nearer || gn
	}
	if nearer {
		a.nearer++
	}
	if e.Novel == 0 && !closer {
		return false
	}
	e.novel = -1
	for i, r := range e.Records {
		if !r.Auto {
			if r.Op.Kind.IsFault() {
				e.faults = append(e.faults, decidedFault{d: len(e.decisions), kind: r.Op.Kind, delay: time.Duration(r.Op.Delay), made: r.Op.Made()})
			}
			e.decisions = append(e.decisions, i)
		}
		if i == e.NovelAt {
			e.novel = len(e.decisions)
		}
	}
	e.nrecords = len(e.Records)
	e.races = races
	e.clock = &c.clock
	e.used = c.clock.Add(1)
	for _, a := range e.Goals {
		e.near = append(e.near, e.before(a.At))
	}
	for _, m := range e.Messages {
		if !slices.Contains(e.kinds, m.Kind) {
			e.kinds = append(e.kinds, m.Kind)
		}
	}
	c.entries = append(c.entries, e)
	c.byTrial[e.Trial] = e
	if c.Max > 0 && len(c.entries) > c.Max {
		c.evict(count)
	}
	return true
}

// before is how many of the entry's decisions came before its record at.
func (e *Entry) before(at int) int {
	n, _ := slices.BinarySearch(e.decisions, at)
	return n
}

// approach counts how close a trial came to the campaign's goals: a goal
// it reached is done, and it says whether the trial came closer to one
// still open than any trial before it, and nearer: closer than one that
// had come some way.
func (c *Corpus) approach(goals []Approach) (closer, nearer bool) {
	for len(c.goals) < len(goals) {
		c.goals = append(c.goals, goalState{})
	}
	for g, a := range goals {
		s := &c.goals[g]
		switch {
		case s.done:
		case a.Reached:
			s.done = true
		case a.Words > s.best:
			nearer = nearer || s.best > 0
			s.best, closer = a.Words, true
		}
	}
	return closer, nearer
}

// onFrontier says whether an entry came as close to an open goal as any
// trial: what the campaign knows of the way there.
func (c *Corpus) onFrontier(e *Entry) bool {
	for g, a := range e.Goals {
		if s := c.goals[g]; !s.done && s.best > 0 && a.Words == s.best {
			return true
		}
	}
	return false
}

// evict lets the entry with the least energy leave a full corpus, never
// one on a goal's frontier while another could go.
func (c *Corpus) evict(count Counter) {
	en := energies(c.entries, count, c.ClassOf)
	low := -1
	for _, spare := range []bool{true, false} {
		for i, x := range c.entries {
			if spare && c.onFrontier(x) {
				continue
			}
			if low < 0 || en[i] < en[low] {
				low = i
			}
		}
		if low >= 0 {
			break
		}
	}
	delete(c.byTrial, c.entries[low].Trial)
	c.entries = slices.Delete(c.entries, low, low+1)
}

// energies are the entries' shares of the search, from the rarity of
// what they showed. Each class of feature (message kinds, log templates,
// orderings: class) holds an equal share of the corpus's energy, and in a
// class each feature's rarity, 1 over the trials that showed it, is split
// among the entries that hold it; an entry's energy is what it holds,
// divided by √(1 + the trials already branched from it).
//
// Why not the plain sum of rarities: on a hashicorp/raft cluster every
// trial shows tens to hundreds of orderings no other trial showed (a
// node's timeline interleaves twenty kinds and fifty templates under
// faults drawn anew), which drowned the two trials of sixty whose
// members logged a failed snapshot install, a template seen nowhere
// else, and a feature every trial holds added the same to every entry.
// A nil class puts every feature in one class.
func energies(entries []*Entry, count Counter, class func(id int) int) []float64 {
	if class == nil {
		class = func(int) int { return 0 }
	}
	// Feature IDs are the coverage's, 1 to the number of features seen:
	// dense, so slices by ID rather than maps (this runs at every
	// generation, and at every trial once the corpus is full).
	top := 0
	for _, e := range entries {
		for _, id := range e.Features {
			top = max(top, id)
		}
	}
	holders := make([]int32, top+1)
	for _, e := range entries {
		for _, id := range e.Features {
			if id >= 0 {
				holders[id]++
			}
		}
	}
	// A feature's share, its rarity over its holders; a class's mass, the
	// sum of its features' rarities (summed in ID order, so that the
	// energies, and the campaign, are the same in every run); a feature's
	// weight, its share of its class's mass.
	share := make([]float64, top+1)
	cls := make([]int, top+1)
	mass := map[int]float64{}
	for id, h := range holders {
		if h > 0 {
			r := 1 / float64(max(1, count(id)))
			share[id] = r / float64(h)
			cls[id] = class(id)
			mass[cls[id]] += r
		}
	}
	for id := range share {
		if holders[id] > 0 {
			share[id] /= mass[cls[id]]
		}
	}
	out := make([]float64, len(entries))
	for i, e := range entries {
		var sum float64
		for _, id := range e.Features {
			if id >= 0 {
				sum += share[id]
			}
		}
		out[i] = sum / math.Sqrt(float64(1+e.Picks))
	}
	return out
}

// View is the corpus as one generation of trials sees it: its entries and
// their energies, frozen when the generation began, so that what a trial
// runs does not depend on which trials of its generation finished first.
type View struct {
	entries []*Entry
	energy  []float64
	total   float64
	// goalFrom is, per entry, the decision past the last line of its
	// heaviest match of the symptom (-1: none).
	goalFrom []int
	// odds are each arm's share of the trials: its rate of novel trials
	// so far (with one of two as a prior), normalized.
	odds []float64
	// frontiers are the open goals some trial came close to, each with
	// the entries that came as close as any.
	frontiers []frontier
	// aiming is the corpus's Aiming; kindCount, when it is on, how many
	// trials showed each kind of the entries' messages, by coverage ID.
	aiming    Aiming
	kindCount map[int]int
	lasts     map[sched.Kind]time.Duration
	// orderSeen is how many trials showed each race order, by ID.
	orderSeen []int32
}

// frontier is what a view knows of the way to a goal: the entries (by
// index) whose lines came as close to it as any trial's, their energies,
// and the share of the branches they get beyond what their energy earns.
type frontier struct {
	entries []int
	energy  []float64
	from    []int // per entry, the decision past its closest line
	share   float64
}

// GoalShare is the share of the branches that go to an open goal's
// frontier, when it is one entry of many: a goal some trial came closer
// to is where the campaign wants to go, and the frontier's energy (its
// rarity, like any entry's) would give it one branch in a corpus's worth.
// The share falls as the frontier grows (when every entry came as close,
// coming as close tells nothing).
const GoalShare = 0.5

// Freeze takes the view the next generation draws its plans from.
func (c *Corpus) Freeze(count Counter) *View {
	v := &View{entries: slices.Clone(c.entries)}
	score, at := c.symptomMatches(v.entries)
	best := 0.0
	for _, s := range score {
		best = max(best, s)
	}
	en0 := energies(v.entries, count, c.ClassOf)
	for i, e := range v.entries {
		en := en0[i]
		from := -1
		if best > 0 {
			// Steered to the symptom: each of its rarest lines short of
			// the best match quarters an entry's share (a line most
			// trials print, next to nothing).
			en *= math.Pow(4, score[i]-best)
			if at[i] >= 0 {
				from = e.before(at[i])
			}
		}
		v.energy = append(v.energy, en)
		v.goalFrom = append(v.goalFrom, from)
		v.total += en
	}
	v.frontiers = c.frontiers(v)
	v.orderSeen = slices.Clone(c.orderSeen)
	v.aiming = c.Aiming
	v.lasts = c.Lasts
	if v.aiming.On() {
		v.kindCount = map[int]int{}
		for _, e := range v.entries {
			for _, k := range e.kinds {
				if _, ok := v.kindCount[k]; !ok {
					v.kindCount[k] = count(k)
				}
			}
		}
	}
	steer := unsteered
	switch {
	case len(v.frontiers) > 0:
		steer = byGoal
	case best > 0:
		steer = bySymptom
	}
	v.odds = c.odds(v.aiming.On(), len(v.lasts) > 0, steer)
	return v
}

// steering is what a view's odds go by.
type steering uint8

const (
	unsteered steering = iota
	bySymptom          // a symptom some trial matched
	byGoal             // an open goal some trial came close to
)

// odds are the arms' shares of the next trials. Unsteered, in two steps:
// a fresh draw or a branch, by the rates of novel trials of fresh draws
// and of all branches pooled, then the changes share the branches by
// their own rates. (With each change an arm beside the fresh one, six
// changes each about as novel as a fresh draw took six sevenths of the
// trials by their number alone, and on the bug suite a branch of a
// passing trial fails less often than a fresh draw:
// bench/results/explore-fresh-or-branch-2026-12-03.md.) Steered by a
// symptom, novelty does not say what brings the campaign nearer: the
// first step goes by the rates of trials that came nearer the symptom
// than any before them, so branches keep the trials where they get
// nearer and fresh draws (POS's own trials) take them back where they do
// not (bench/results/symptom-steered-odds-2026-12-04.md). Steered by a
// goal, whose words are too few for a trial to come nearer more than
// once or twice before it reaches it, the fresh arm is one arm beside the
// changes: the frontier's branches are the way there. Fresh draws never
// fall below MinFresh: they are what finds what no entry leads to, and
// what the campaign is worth when nothing does. A change with nothing to
// act on in this campaign (Aim without aiming, Longer without kinds that
// last) gets no odds, and the others' are what they were without it.
func (c *Corpus) odds(aiming, lasting bool, steer steering) []float64 {
	novel := func(a armStats) float64 { return float64(a.novel+1) / float64(a.trials+2) }
	odds := make([]float64, len(c.arms))
	var branches armStats
	var sum float64
	for arm, a := range c.arms {
		if Arm(arm) == Fresh {
			continue
		}
		if Arm(arm) == Arm(1+sched.Aim) && !aiming || Arm(arm) == Arm(1+sched.Longer) && !lasting {
			continue // nothing to aim with or lengthen: the others' odds are unchanged
		}
		branches.trials += a.trials
		branches.novel += a.novel
		branches.nearer += a.nearer
		odds[arm] = novel(a)
		sum += odds[arm]
	}
	switch steer {
	case byGoal:
		fresh := novel(c.arms[Fresh])
		odds[Fresh] = max(MinFresh, fresh/(fresh+sum))
	case bySymptom:
		nearer := func(a armStats) float64 { return float64(a.nearer+1) / float64(a.trials+2) }
		fresh, branch := nearer(c.arms[Fresh]), nearer(branches)
		odds[Fresh] = max(MinFresh, fresh/(fresh+branch))
	default:
		fresh, branch := novel(c.arms[Fresh]), novel(branches)
		odds[Fresh] = max(MinFresh, fresh/(fresh+branch))
	}
	for arm := range odds {
		if Arm(arm) != Fresh {
			odds[arm] *= (1 - odds[Fresh]) / sum
		}
	}
	return odds
}

// frontiers are the view's frontier of each open goal some trial came
// close to, in goal order.
func (c *Corpus) frontiers(v *View) []frontier {
	var out []frontier
	for g, s := range c.goals {
		if s.done || s.best == 0 {
			continue
		}
		var f frontier
		for i, e := range v.entries {
			if g < len(e.Goals) && e.Goals[g].Words == s.best {
				f.entries = append(f.entries, i)
				f.energy = append(f.energy, v.energy[i])
				f.from = append(f.from, e.near[g])
			}
		}
		if len(f.entries) == 0 {
			continue // its entries left the corpus
		}
		f.share = GoalShare * (1 - float64(len(f.entries))/float64(len(v.entries)))
		out = append(out, f)
	}
	return out
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
	// Wait is Late's number of decisions (and the most a reversing Flip
	// keeps an op back), Fault Drop's kind, Aim Aim's hold.
	Wait  int
	Fault sched.Kind
	Aim   AimAt
	// Race is the parent's race Flip reverses, by its records (A, B):
	// the prefix ends just before A (zero: a flip of one decision).
	Race [2]int
	// Length is how long Longer makes the fault of the prefix's last
	// decision last.
	Length time.Duration
}

func (p Plan) String() string {
	if p.Parent == nil {
		return "fresh"
	}
	s := fmt.Sprintf("trial %d to decision %d of %d, then %v", p.Parent.Trial, p.Prefix, len(p.Parent.decisions), p.Change)
	switch p.Change {
	case sched.Late:
		s += fmt.Sprintf(" %d", p.Wait)
	case sched.Flip:
		if p.Race != [2]int{} {
			s += fmt.Sprintf(" record %d before %d", p.Race[1], p.Race[0])
		}
	case sched.Drop:
		s += " " + p.Fault.String()
	case sched.Aim:
		s += " " + p.Aim.String()
	case sched.Longer:
		s += fmt.Sprintf(" %v to %v", p.Parent.faultAt(p.Prefix-1), p.Length)
	}
	return s
}

// Plan draws what the trial with this seed runs: an arm by the odds
// (fresh always while the view is empty); for a branch, an entry drawn in
// proportion to its energy, and a decision, mostly past the record where
// it showed something first. A drop with no fault after the prefix, an
// aim with nothing to aim at or no budget left and a longer with no fault
// to lengthen extend instead.
func (v *View) Plan(seed int64, fr sched.FaultReplays) Plan {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6578706c6f7265)) // "explore"
	if v.Len() == 0 || v.total <= 0 {
		return Plan{}
	}
	arm := Arm(pick(r, v.odds))
	if arm == Fresh {
		return Plan{}
	}
	e, from := v.entry(r)
	p := Plan{Parent: e, Prefix: r.IntN(len(e.decisions) + 1)}
	past := 0 // the first decision the change may come at
	if from >= 0 && r.IntN(3) > 0 {
		past = from
		// Mostly just past what it showed first: keep it, and vary what
		// follows it (a prefix that ran on would keep what followed too).
		p.Prefix = from + r.IntN(1+(len(e.decisions)-from)/4)
	}
	p.Change = sched.Change(arm - 1)
	switch p.Change {
	case sched.Late:
		p.Wait = 1 + r.IntN(max(8, len(e.decisions)/8))
	case sched.Flip:
		// Half the flips reverse a race the conflict analysis found; half
		// release another op where the prefix was drawn, for one decision,
		// which reaches what no race names (an op racing with a fault, an
		// order inside a process).
		if r.IntN(2) == 0 {
			break
		}
		if rc, ok := v.pickRace(r, e, past); ok {
			p.Prefix, p.Race = e.before(int(rc.a)), [2]int{int(rc.a), int(rc.b)}
			p.Wait = flipWait + 2*(e.before(int(rc.b))-p.Prefix)
		}
	case sched.Drop:
		k, ok := e.nextFault(p.Prefix, fr)
		if !ok {
			p.Change = sched.Extend
		}
		p.Fault = k
	case sched.Aim:
		room := v.aimRoom(e, len(e.decisions), fr)
		p.Prefix = min(p.Prefix, room)
		a, at, ok := v.aimAt(r, e, p.Prefix)
		if !ok {
			p.Change = sched.Extend
		}
		// The hold lands on the message it is aimed at: the prefix runs
		// on to just before that message's delivery, within the budget's
		// room. Made where the prefix first stood, a hold shorter than the
		// time to that delivery would end before it and hold nothing.
		if a.Gray || a.Drop {
			p.Prefix = min(room, e.before(at)) // it may land before the prefix drawn
		} else {
			p.Prefix = max(p.Prefix, min(room, e.before(at)))
		}
		p.Aim = a
	case sched.Longer:
		f, ok := v.longer(r, e)
		if !ok {
			p.Change = sched.Extend
			break
		}
		p.Prefix, p.Length = f.d+1, v.lasts[f.kind]
	}
	return p
}

// longer draws the fault a Longer branch of e makes last longer: one of
// its injections of a kind the campaign may lengthen that lasted less than
// the longest the plan allows, each as likely. The branch makes it last
// that longest: a fault's length matters where it outlasts a timeout (a
// failure detector's, a lease's, a client's), and the longest outlasts
// every timeout a shorter one does. None when the entry made no such
// injection.
func (v *View) longer(r *rand.Rand, e *Entry) (decidedFault, bool) {
	var cands []decidedFault
	for _, f := range e.faults {
		if most, ok := v.lasts[f.kind]; ok && !f.made && f.delay > 0 && f.delay < most {
			cands = append(cands, f)
		}
	}
	if len(cands) == 0 {
		return decidedFault{}, false
	}
	return cands[r.IntN(len(cands))], true
}

// faultAt is the kind of the fault at the entry's decision d ("" when it
// made none there).
func (e *Entry) faultAt(d int) sched.Kind {
	for _, f := range e.faults {
		if f.d == d {
			return f.kind
		}
	}
	return ""
}

// aimRoom is the prefix an Aim branch of e at decision d keeps so that the
// trial's budget has room for its hold: d, or, when the entry's
// injections before d spent the budget, the decision of the one that
// spent it (the hold is made instead of it).
func (v *View) aimRoom(e *Entry, d int, fr sched.FaultReplays) int {
	injections := 0
	for _, f := range e.faults {
		if f.d >= d {
			break
		}
		if fr == nil || !fr(f.kind).Recovery {
			if injections++; injections >= v.aiming.Budget {
				return f.d
			}
		}
	}
	return d
}

// aimAt draws the hold (or slow) an Aim branch of e at decision d
// injects: a kind of message the entry's trial delivered after d on a
// link with an end among the aiming's nodes, the rarer kinds (fewer
// trials showed them) the likelier, each link and kind once; held on that
// link, on every link into its receiver or on every link out of its
// sender, each as likely (the two last only where the trial had the kind
// on another such link); its length from a tenth of MaxHold to all of it,
// in whole ms; a slow instead of a hold where the aiming allows it; and
// the record of the message drawn (the kind's first on its link after
// d). None when nothing was delivered there.
func (v *View) aimAt(r *rand.Rand, e *Entry, d int) (AimAt, int, bool) {
	end := e.nrecords
	if d < len(e.decisions) {
		end = e.decisions[d]
	}
	if v.drawsDrop(r) {
		return v.aimDrop(r, e)
	}
	if v.drawsGray(r) {
		return v.aimGray(r, e, end)
	}
	cands, weights := v.linkKinds(e, end, false)
	if len(cands) == 0 {
		return AimAt{}, 0, false
	}
	m := cands[pick(r, weights)]
	mh := v.aiming.MaxHold
	hold := (mh/10 + time.Duration(r.Int64N(int64(mh-mh/10)+1))).Truncate(time.Millisecond)
	a := AimAt{From: m.From, To: m.To, Kind: m.Kind, Shape: m.Shape, Label: m.Label, Hold: hold}
	// Where each peer has its own link for a kind (a vote answer from each
	// voter, an append to each follower), holding it on one link leaves
	// the others to make up for it. A scope that adds no link to the
	// message's own (the receiver got the kind from no other node, the
	// sender sent it to no other) is not drawn: it would hold the same.
	into, out := false, false
	for _, o := range e.Messages {
		if o.Kind != m.Kind || o.From == o.To || o.From == "" || o.To == "" {
			continue
		}
		into = into || o.To == m.To && o.From != m.From
		out = out || o.From == m.From && o.To != m.To
	}
	scopes := []*string{nil}
	if into {
		scopes = append(scopes, &a.From)
	}
	if out {
		scopes = append(scopes, &a.To)
	}
	if end := scopes[r.IntN(len(scopes))]; end != nil {
		*end = sched.AnyNode
	}
	// A slow rather than a hold: drawn only where the plan allows slow
	// links (a plan with holds alone makes the draws it always made).
	if v.aiming.Slow && v.aiming.MaxOutage > 0 && (!v.aiming.Hold || r.IntN(2) == 1) {
		mo, lo := v.aiming.MaxOutage, v.aiming.MinOutage
		if lo <= 0 {
			lo = mo / 10
		}
		lo = min(lo, mo)
		a.Slow = true
		a.While = (lo + time.Duration(r.Int64N(int64(mo-lo)+1))).Truncate(time.Millisecond)
	}
	return a, m.Record, true
}

// linkKinds are what an aim may take from e's trial after record end:
// the first message of each link and kind (datagrams only, with dgrams)
// on a link with an end among the aiming's nodes, each weighed by its
// kind's rarity (fewer trials showed it).
func (v *View) linkKinds(e *Entry, end int, dgrams bool) ([]Message, []float64) {
	type link struct {
		from, to string
		kind     int
	}
	var cands []Message
	var weights []float64
	seen := map[link]bool{}
	for _, m := range e.Messages {
		l := link{m.From, m.To, m.Kind}
		if dgrams && !m.Datagram || m.Record < end || m.From == "" || m.To == "" || m.From == m.To || seen[l] ||
			!slices.Contains(v.aiming.Nodes, m.From) && !slices.Contains(v.aiming.Nodes, m.To) {
			continue
		}
		seen[l] = true
		cands = append(cands, m)
		weights = append(weights, 1/float64(max(1, v.kindCount[m.Kind])))
	}
	return cands, weights
}

// drawsDrop draws whether an Aim branch loses a datagram rather than
// holding, slowing or graying: only where the plan allows drops (a plan
// without them makes the draws it always made), each fault the plan
// allows as likely.
func (v *View) drawsDrop(r *rand.Rand) bool {
	a := v.aiming
	if !a.Drop {
		return false
	}
	n := 1
	for _, on := range []bool{a.Hold && a.MaxHold > 0, a.Slow && a.MaxOutage > 0 && a.MaxHold > 0, a.Gray && a.MaxHold > 0} {
		if on {
			n++
		}
	}
	return r.IntN(n) == 0
}

// aimDrop draws the datagram an Aim branch of e loses: the first of a
// link and kind its trial delivered, on a link with an end among the
// aiming's nodes, the rarer kinds the likelier, wherever the prefix was
// drawn: a kind sent once (a leave, a cancel, a commit) is as likely as
// one sent all along, though it comes before most drawn prefixes. It is
// lost while in flight, just before that delivery (the prefix is cut
// back to there), or, where the budget's room ends the prefix sooner,
// the drop is armed there and loses the next datagram of its kind on its
// link. It returns the record it lands before; none when no datagram
// qualifies.
func (v *View) aimDrop(r *rand.Rand, e *Entry) (AimAt, int, bool) {
	cands, weights := v.linkKinds(e, 0, true)
	if len(cands) == 0 {
		return AimAt{}, 0, false
	}
	m := cands[pick(r, weights)]
	return AimAt{From: m.From, To: m.To, Kind: m.Kind, Shape: m.Shape, Label: m.Label, Drop: true}, m.Record, true
}

// drawsGray draws whether an Aim branch makes a gray rather than a hold or
// a slow: only where the plan allows grays (a plan without them makes the
// draws it always made), each fault the plan allows as likely.
func (v *View) drawsGray(r *rand.Rand) bool {
	a := v.aiming
	if !a.Gray {
		return false
	}
	n := 1
	if a.Hold {
		n++
	}
	if a.Slow && a.MaxOutage > 0 {
		n++
	}
	return r.IntN(n) == 0
}

// aimGray draws the gray an Aim branch of e injects when its prefix ends
// at record end: a node among the aiming's nodes gray one way, to it or
// from it, made just before a message of e's trial that went that way
// after end and was not of the kind most of the last grayWindow messages
// that way were (a gray lets that kind through, so it would not land on
// such a message). A gray to a node lands before an answer it awaits, one
// from it before a request it makes: an answer is a message from a peer
// whose last exchange with the node before it was the node's own message,
// not its keepalive (the kind it sends most, keepaliveCount times at
// least: a keepalive asks nothing). A node that asked several peers and waits for a quorum is
// where stale votes and acknowledgements count; a node that keeps its
// keepalives going while its requests stall looks alive to all. A gray
// before an answer lands before the first answer of that kind to that
// request, even one before end: the first answer of a quorum may decide
// it. Each node, way and kind is a candidate once, the rarer kinds the
// likelier; the gray's length is a tenth of MaxHold to all of it, in
// whole ms. It returns the record it lands before; none when no message
// qualifies.
func (v *View) aimGray(r *rand.Rand, e *Entry, end int) (AimAt, int, bool) {
	type way struct {
		node string
		to   bool
	}
	type cand struct {
		w    way
		kind int
	}
	type pair struct{ a, b string } // a < b
	windows := map[way]*recent.Window[int]{}
	last := map[pair]int{} // the index in e.Messages of the last message between two nodes
	seen := map[cand]bool{}
	var cands []Message
	var ways []way
	var lands []int
	var weights []float64
	for i, m := range e.Messages {
		if m.From == "" || m.To == "" || m.From == m.To {
			continue
		}
		pr := pair{min(m.From, m.To), max(m.From, m.To)}
		// m answers m.To when the last message between the two went the
		// other way and was not its sender's commonest kind out.
		asked, answer := -1, false
		if j, ok := last[pr]; ok {
			q := e.Messages[j]
			if q.From == m.To && !keepalive(windows[way{q.From, false}], q.Kind) {
				asked, answer = j, true
			}
		}
		for _, w := range []way{{m.To, true}, {m.From, false}} {
			k := windows[w]
			if k == nil {
				k = recent.New[int](grayWindow)
				windows[w] = k
			}
			c := cand{w, m.Kind}
			if m.Record >= end && slices.Contains(v.aiming.Nodes, w.node) && !seen[c] && k.Len() > 0 &&
				k.Commonest() != m.Kind && answer == w.to {
				seen[c] = true
				land := m.Record
				if answer {
					// The first answer of this kind to the node since it asked.
					for _, o := range e.Messages[asked+1 : i] {
						if o.To == m.To && o.Kind == m.Kind && o.From != m.To {
							land = o.Record
							break
						}
					}
				}
				cands = append(cands, m)
				ways = append(ways, w)
				lands = append(lands, land)
				weights = append(weights, 1/float64(max(1, v.kindCount[m.Kind])))
			}
		}
		// Counted after the candidates: the kind most of the messages
		// before this one were.
		windows[way{m.To, true}].Add(m.Kind)
		windows[way{m.From, false}].Add(m.Kind)
		last[pr] = i
	}
	if len(cands) == 0 {
		return AimAt{}, 0, false
	}
	i := pick(r, weights)
	m, w := cands[i], ways[i]
	mh := v.aiming.MaxHold
	hold := (mh/10 + time.Duration(r.Int64N(int64(mh-mh/10)+1))).Truncate(time.Millisecond)
	a := AimAt{From: w.node, To: sched.AnyNode, Kind: m.Kind, Shape: m.Shape, Label: m.Label, Hold: hold, Gray: true}
	if w.to {
		a.From, a.To = sched.AnyNode, w.node
	}
	return a, lands[i], true
}

// grayWindow is how many of a node's last messages one way say which kind
// a gray of it lets through (faults.Gray counts as many).
const grayWindow = 100

// keepaliveCount is how many of a node's last messages one way a kind
// must be, besides the commonest, to be taken for its keepalive: one
// request is the commonest of a node that has sent nothing else.
const keepaliveCount = 3

// keepalive reports whether kind is the one most of w's messages were, at
// least keepaliveCount of them.
func keepalive(w *recent.Window[int], kind int) bool {
	return w != nil && w.Count(kind) >= keepaliveCount && w.Commonest() == kind
}

// entry draws the entry a branch starts from, and the decision its prefix
// mostly reaches past (-1: none): with a frontier's share, one of an open
// goal's frontier and the decision after its closest line (keep what
// brought it there, vary what follows); else one by energy and the
// decision after its symptom's last matched line, or where it showed
// something first.
func (v *View) entry(r *rand.Rand) (*Entry, int) {
	if len(v.frontiers) > 0 {
		// Drawn only when a goal has a frontier: a campaign without goals
		// makes the draws it always made.
		f := &v.frontiers[r.IntN(len(v.frontiers))]
		if r.Float64() < f.share {
			i := pick(r, f.energy)
			return v.entries[f.entries[i]], f.from[i]
		}
	}
	i := pick(r, v.energy)
	e := v.entries[i]
	if v.goalFrom[i] >= 0 {
		return e, v.goalFrom[i] // a symptom's: past the last line it matched
	}
	return e, e.novel
}

// pick draws an index with odds in proportion to the weights.
func pick(r *rand.Rand, weights []float64) int {
	var total float64
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	last := len(weights) - 1
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
		if w > 0 {
			last = i
		}
	}
	// Rounding left x past the last weight: the last that has odds (an
	// arm turned off has none).
	return last
}

// nextFault is the kind of the first injection the entry made at or after
// its decision d.
func (e *Entry) nextFault(d int, fr sched.FaultReplays) (sched.Kind, bool) {
	for _, f := range e.faults {
		if f.d >= d && (fr == nil || !fr(f.kind).Recovery) {
			return f.kind, true
		}
	}
	return sched.KindInvalid, false
}

// Branch is the strategy that runs a branch plan: the parent's first
// Prefix decisions forced, the change, then then (reset with seed). It
// fails only when the parent's packed records do not unpack.
func (p Plan) Branch(then sched.Strategy, seed int64, fr sched.FaultReplays) (*sched.Branch, error) {
	e := p.Parent
	recs, err := e.records()
	if err != nil {
		return nil, err
	}
	end := len(recs)
	var next *sched.Op
	if p.Prefix < len(e.decisions) {
		end = e.decisions[p.Prefix]
		next = &recs[end].Op
	}
	prefix := recs[:end:end]
	if p.Change == sched.Longer {
		// The prefix's last decision is the fault made longer: its record
		// carries the new length, which the injector keeps from it.
		if p.Prefix < 1 || p.Prefix > len(e.decisions) || !recs[e.decisions[p.Prefix-1]].Op.Kind.IsFault() {
			return nil, fmt.Errorf("explore: decision %d of trial %d is no fault to make longer", p.Prefix-1, e.Trial)
		}
		prefix = slices.Clone(prefix)
		prefix[e.decisions[p.Prefix-1]].Op.Delay = int64(p.Length)
	}
	b := &sched.Branch{Prefix: prefix, Parent: next, Change: p.Change, Wait: p.Wait, Fault: p.Fault,
		Then: then, Seed: seed, Faults: fr}
	if a, z := p.Race[0], p.Race[1]; p.Change == sched.Flip && a == end && z > a && z < len(recs) {
		b.Before = &recs[z].Op
		for i := a + 1; i < z; i++ {
			if b.LikeBefore(&recs[i].Op) {
				b.Skip++
			}
		}
	}
	return b, nil
}
