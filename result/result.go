package result

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer/stats"
)

// Shard is one part of a campaign split over processes or machines: the
// trials whose index is Index modulo Count. Each keeps its index and its
// seed, so the shards of a campaign together run the trials one process
// would. Interleaving (rather than ranges) gives every shard early and
// late trials alike.
//
// A "+" strategy learns from the trials before it; a shard learns only
// from its own (in its own order, batch by batch as a whole campaign
// does), so its schedules match one process's only with Count 1. Other
// strategies' trials are the same trial for trial.
type Shard struct{ Index, Count int }

// String is the shard as --shard takes it, I/N.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Size is how many of a campaign's trials are the shard's.
func (s Shard) Size(trials int) int {
	if trials <= s.Index {
		return 0
	}
	return (trials-s.Index-1)/s.Count + 1
}

// Trial is the campaign index of the shard's pos-th trial.
func (s Shard) Trial(pos int) int { return pos*s.Count + s.Index }

// Summary is what a campaign found.
type Summary struct {
	Spec     *spec.Spec
	Strategy string
	Seed     int64 // the campaign's
	// Planned is the campaign's number of trials, all shards together;
	// Trials the number this run finished.
	Planned  int
	Shard    Shard // zero when the campaign ran whole
	Trials   int
	Failures int
	ByKind   map[sched.OutcomeKind]int
	First    *TrialResult // first failing trial by index
	Results  []*TrialResult
	Duration time.Duration
	// Errors counts the trials that ended in lockstep's own problem: a
	// lockstep error, or a failure whose trace did not replay
	// (Unreplayable counts those apart too).
	Errors int
	// FirstError is the first trial, by index, that ended in a lockstep
	// error: its Outcome says why.
	FirstError *TrialResult
	// Unreplayable counts the failing trials whose trace, replayed right
	// after them (run --verify), diverged; Verified the failing trials
	// replayed and found the same.
	Unreplayable, Verified int
	// Reached counts, per name of the spec's sometimes and unique
	// properties, the trials that printed a line it matched.
	Reached map[string]int
	// Closest is, per name of the spec's sometimes properties, the trial
	// that came closest to it (whether or not another reached it).
	Closest map[string]Closest
	// Coverage is what the campaign's trials showed, as features
	// (package coverage): nil for native runs.
	Coverage *CoverageSummary
	// Interrupted is set when the campaign's context was cancelled (Ctrl-C):
	// the summary covers the trials that finished before.
	Interrupted bool
	// Stats is the conflict-prediction accuracy per trial, for --stats.
	Stats []conflict.Stats
	// History is the conflict history at the end ("+" strategies): what
	// it was loaded with and what the trials taught it.
	History *conflict.History
	// Census is the campaign's ops by conflict signature ("+"
	// strategies), for --stats: which signatures dominate and how often
	// each conflicted.
	Census *conflict.Census
	// Symptom is how close the trials came to run --symptom's excerpt
	// (nil without one).
	Symptom *SymptomSummary
}

// Unreached are the spec's sometimes properties no trial reached, in
// spec order.
func (s *Summary) Unreached() []spec.Property {
	if s.Spec == nil {
		return nil
	}
	var out []spec.Property
	for _, p := range s.Spec.Properties {
		if p.Kind == spec.Sometimes && s.Reached[p.Name] == 0 {
			out = append(out, p)
		}
	}
	return out
}

// RequiredUnreached reports whether a sometimes the spec requires was
// reached by no trial: the campaign failed.
func (s *Summary) RequiredUnreached() bool {
	for _, p := range s.Unreached() {
		if p.Required {
			return true
		}
	}
	return false
}

// HitRatio is failing trials over trials.
func (s *Summary) HitRatio() float64 {
	if s.Trials == 0 {
		return 0
	}
	return float64(s.Failures) / float64(s.Trials)
}

// Add counts one finished trial; trials come in index order.
func (s *Summary) Add(r *TrialResult) {
	s.Results = append(s.Results, r)
	s.Trials++
	s.ByKind[r.Outcome.Kind]++
	if r.Outcome.Kind.IsLocksteps() {
		s.Errors++
		if s.FirstError == nil {
			s.FirstError = r
		}
	}
	if r.Outcome.Kind == sched.Unreplayable {
		s.Unreplayable++
	}
	if r.Verify != nil && r.Verify.Same {
		s.Verified++
	}
	for _, name := range r.Reached {
		if s.Reached == nil {
			s.Reached = map[string]int{}
		}
		s.Reached[name]++
	}
	for _, n := range r.Near {
		if c, ok := s.Closest[n.Name]; !ok || n.Words > c.Words {
			if s.Closest == nil {
				s.Closest = map[string]Closest{}
			}
			s.Closest[n.Name] = Closest{Near: n, Trial: r.Index}
		}
	}
	if r.Outcome.Kind.IsFailure() {
		s.Failures++
		if s.First == nil || r.Index < s.First.Index {
			s.First = r
		}
	}
}

// TrialResult is what one trial produced.
type TrialResult struct {
	Index     int
	Seed      int64
	Outcome   sched.Outcome
	Dir       string // the trial's directory (node output)
	TracePath string // "" when no trace was written
	Records   []sched.Record
	Duration  time.Duration
	Stats     stats.Trial
	// Launch, Teardown and Reset are the real time spent starting nodes,
	// killing them and resetting the network; with Stats' settle, decide
	// and release times they account for Duration (--stats prints them).
	Launch, Teardown, Reset time.Duration
	// NodesCPU is the CPU time the nodes' processes used (their cgroups'
	// usage): what of the wait for quiescence was the programs' own work.
	NodesCPU time.Duration
	// Windows are the steps the fault and delay windows held: trial 0's
	// are what the campaign's other trials draw step triggers over.
	Windows Windows
	// Conntrack compares the kernel's byte records with lockstep's
	// accounting (zero when connection tracking is unavailable).
	Conntrack ConntrackStats
	// Conflict is how well the conflict history predicted this trial's
	// conflicts ("+" strategies; nil otherwise).
	Conflict *conflict.Stats
	// Reached names the spec's sometimes and unique properties a line of
	// this trial matched.
	Reached []string `json:",omitempty"`
	// Near is how close this trial came to each sometimes property it did
	// not reach, when one of its lines held a word of its pattern.
	Near []Near `json:",omitempty"`
	// Novel is how many features this trial showed first in its campaign
	// (package coverage).
	Novel int `json:",omitempty"`
	// TimedEnd are the real-time points (sched.Record.Timed) after the
	// last record: the trial ended before another decision carried them.
	TimedEnd []string `json:",omitempty"`
	// TmpNotKept says why the nodes' {{tmp}} directories of a trial that
	// was to keep them were not copied (the disk was short of room); ""
	// otherwise.
	TmpNotKept string `json:",omitempty"`
	// Verify is what replaying the trial's trace right after it showed
	// (run --verify); nil when it was not replayed.
	Verify *Verification
	// Plan is what an exploring campaign ran ("fresh", or "trial 12 to
	// decision 340 of 900, then flip"); empty under other strategies.
	Plan string `json:",omitempty"`
	// Unique are the features this failing trial showed that no passing
	// trial of its campaign did, described (one of the first failing
	// trials; nil otherwise).
	Unique []string `json:",omitempty"`
	// Symptom is how many of a --symptom's lines the trial printed in
	// order; SymptomStep the step after which the last of them was.
	Symptom     int `json:",omitempty"`
	SymptomStep int `json:",omitempty"`
	// SymptomHits are the trial's lines that are lines of the symptom
	// (coverage.Symptom.Hits), each as the symptom line's index and the
	// step after which the trial printed it: what explore weighs.
	SymptomHits [][2]int `json:"-"`
	// Lines are the nodes' lines in the order lockstep read them, when
	// asked to keep them (replay --lines).
	Lines []Line `json:"-"`
	// Features and Corpus are the campaign's features and corpus size once
	// this trial was counted, for the progress line.
	Features, Corpus int `json:"-"`
}

// Near is how close a trial came to a sometimes property none of its
// lines matched: of the Of words of its pattern (coverage.GoalWords), the
// most one of its lines held in order, the step after which the first
// such line was printed, and that line, quoted.
type Near struct {
	Name  string `json:"name"`
	Words int    `json:"words"`
	Of    int    `json:"of"`
	Step  int    `json:"step"`
	Line  string `json:"line"`
}

// Line is a line a node printed, and the step after which lockstep read
// it (it reads the nodes' output at every decision, every thread
// stopped, so a replay reads the same lines after the same steps).
type Line struct {
	Node, Text string
	Step       int
}

// Closest is the trial of a campaign that came closest to a sometimes
// property no trial reached, and how close (the first such trial).
type Closest struct {
	Near
	Trial int `json:"trial"`
}

// SymptomSummary is how close a campaign came to its --symptom: of its
// Lines, the most a trial printed in order (Best, first in BestTrial), and
// the first trial that reproduced it (-1: none).
type SymptomSummary struct {
	Lines      int `json:"lines"`
	Best       int `json:"best"`
	BestTrial  int `json:"best_trial"`
	Reproduced int `json:"reproduced"`
}

// CoverageSummary is a campaign's coverage: how many features its trials
// showed, by class, and the curve of features seen after each trial.
type CoverageSummary struct {
	Features, Kinds, Templates, Orderings int
	// Curve is the features seen after each trial, in trial order.
	Curve []int
	// Corpus is how many trials an exploring campaign kept (0 under
	// other strategies).
	Corpus int `json:",omitempty"`
	// Packed is how many of the corpus's trials hold their records packed
	// (explore.Corpus.MaxRecords): memory, not what the campaign does.
	Packed int `json:",omitempty"`
	// Seen are the features themselves, for a shard's result to carry to
	// a merge (not in the JSON summary: there may be thousands).
	Seen []SeenFeature `json:"-"`
}

// SeenFeature is one feature of a campaign's coverage as shards keep it:
// its class and key (package coverage), the first trial that showed it
// and how many did. A merge joins them into the one-process coverage.
type SeenFeature struct {
	Class  string `json:"class"`
	Key    string `json:"key"`
	First  int    `json:"first"`
	Trials int    `json:"trials"`
}

// MergeCoverage is the coverage of shards' trials together: the features
// each shard saw, joined by key (the first trial the least, the trials
// added), and the curve over the trials' indices, in order, as one
// process would have drawn it.
func MergeCoverage(shards [][]SeenFeature, indices []int) *CoverageSummary {
	byKey := map[string]*SeenFeature{}
	var order []*SeenFeature
	for _, seen := range shards {
		for _, f := range seen {
			k := f.Class + "\x00" + f.Key
			if m, ok := byKey[k]; ok {
				m.First, m.Trials = min(m.First, f.First), m.Trials+f.Trials
				continue
			}
			g := f
			byKey[k] = &g
			order = append(order, &g)
		}
	}
	c := &CoverageSummary{Features: len(order)}
	firsts := make([]int, 0, len(order))
	for _, f := range order {
		c.Seen = append(c.Seen, *f)
		firsts = append(firsts, f.First)
		switch f.Class {
		case "kind":
			c.Kinds++
		case "template":
			c.Templates++
		case "ordering":
			c.Orderings++
		}
	}
	slices.Sort(firsts)
	j := 0
	for _, i := range indices {
		for j < len(firsts) && firsts[j] <= i {
			j++
		}
		c.Curve = append(c.Curve, j)
	}
	return c
}

// AddedSince is how many features the last n trials added.
func (c *CoverageSummary) AddedSince(n int) int {
	if c == nil || len(c.Curve) == 0 {
		return 0
	}
	if n >= len(c.Curve) {
		return c.Curve[len(c.Curve)-1]
	}
	return c.Curve[len(c.Curve)-1] - c.Curve[len(c.Curve)-1-n]
}

// Verification is a failing trial's trace replayed right after the trial.
type Verification struct {
	// Same is true when the replay gave the trace's outcome and ops.
	Same bool
	// Diff says where the replay diverged, when Same is false.
	Diff string
	// Failure is the outcome the trial itself had: an unreplayable
	// trial's Outcome says Unreplayable instead.
	Failure sched.Outcome
	// Dir is the replay's trial directory, kept when it diverged.
	Dir string
}

// Windows are the steps a trial's fault and delay windows held (or are
// expected to hold): from the first step the clock stood in the window to
// the first past it.
type Windows struct {
	Faults, Delays int
}

// ConntrackStats says how the kernel's view of a trial's bytes compared
// with lockstep's own accounting.
type ConntrackStats struct {
	Recvs     int // recv records with data
	Matched   int // ... that found their kernel record
	Disagreed int // ... whose causes differed from lockstep's accounting
	// First describes the first disagreement: the recv, its connection
	// and both lists of deliveries, so that one seen is one that can be
	// looked into.
	First string `json:",omitempty"`
}
