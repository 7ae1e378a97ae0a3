package engine

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// RunOptions override the spec for one campaign.
type RunOptions struct {
	Trials   int    // 0: the spec's
	Strategy string // "": the spec's
	Seed     *int64 // nil: the spec's
	Jobs     int    // parallel trials, each with its own network; 0 = 1
	OutDir   string
	// Replace lets an OutDir given explicitly that holds a previous run's
	// trials be cleared of them; without it such a directory is refused
	// (ErrOutHoldsRun). The default directory is always replaced.
	Replace bool
	// StopOnFirst stops the campaign at its first failing trial; with a
	// Symptom, at the first that reproduces it (what the campaign is
	// after: a trial failing otherwise on the way is still counted).
	StopOnFirst bool
	TraceAll    bool
	// KeepTmp keeps the nodes' {{tmp}} directories of passing trials too
	// (a failing trial's are kept unless DropTmp).
	KeepTmp bool
	// DropTmp drops a failing trial's {{tmp}} directories too, keeping its
	// trace and the nodes' output: a long campaign of a system that writes
	// much there (etcd's 64 MB log files) would fill the host's disk with
	// its failures' copies. Run refuses it with KeepTmp.
	DropTmp bool
	History string // history file for "+" strategies ("" = spec's, or none)
	// Native runs the trials without lockstep (no tracer, real time) for
	// the baseline hit ratio; a trial whose clients outlive NativeLimit
	// (default: the spec's limits.real_time) is a hang.
	Native      bool
	NativeLimit time.Duration
	Logger      *slog.Logger
	// Progress is called after every trial, in trial order.
	Progress func(r *TrialResult)
	// Shard, when its Count is set, runs only that shard's trials of the
	// campaign (see Shard); the --history file is then only read.
	Shard Shard
	// Verify replays each failing trial's trace right after the trial; a
	// failure whose replay diverges becomes an Unreplayable outcome
	// (run --verify, on by default in the CLI).
	Verify bool
	// Symptom, when set, is a production log excerpt the campaign aims at
	// (run --symptom): a trial whose node prints its last line fails
	// (property "symptom"), every trial's lines are matched against it,
	// and an exploring campaign steers to longer matches.
	Symptom *coverage.Symptom
	// DropRecords lets go of each trial's records once it is counted and
	// Progress has seen it (the summary's results keep the rest; an
	// exploring campaign's corpus keeps its entries' own). Without it a
	// campaign holds every trial's records to its end: about 13.5 MB per
	// trial of examples/raft, so 1,000 trials would hold 13 GB. The CLI
	// sets it; a caller that reads Summary.Results' records does not.
	DropRecords bool
	// CorpusRecords bounds the records an exploring campaign's corpus
	// holds unpacked (0: explore.DefaultMaxRecords; below 0: no bound):
	// past it the entries used least recently are packed, which changes
	// nothing but memory and the time a branch takes to unpack.
	CorpusRecords int
}

// historyBatch is how many trials share one frozen view of the history
// table: trial i learns from every trial of earlier batches. A fixed batch
// keeps results identical whatever --jobs is.
const historyBatch = 8

// finish closes a campaign's summary.
func finish(s *Summary, start time.Time, interrupted bool) *Summary {
	s.Duration = time.Since(start)
	s.Interrupted = interrupted
	return s
}

func newStrategy(sp *spec.Spec, name string, pred sched.Predictor) (sched.Strategy, error) {
	params := sched.Params{PCTDepth: sp.Scheduler.PCTDepth, Predictor: pred}
	if sp.Scheduler.Conflict.Mode == "weight" {
		params.Mode = sched.PlusMode{Weight: sp.Scheduler.Conflict.Weight}
	}
	return sched.New(name, params)
}

// TrialSeed derives trial i's seed from the campaign seed (splitmix64), so
// that trials are independent and any one can be re-run alone.
func TrialSeed(base int64, trial int) int64 {
	z := uint64(base) + uint64(trial+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

// campaignCoverage is a campaign's coverage as its trials finish, with
// the trial that showed each feature first (what a shard's result keeps).
type campaignCoverage struct {
	cov   *coverage.Coverage
	first map[coverage.Feature]int
	// passing counts, by feature ID, the passing trials that showed each;
	// failing are the feature IDs of the first failing trials, by trial,
	// for the features no passing trial had (unique).
	passing map[int]int
	failing map[int][]int
	// passRepeats are, by template, the most lines of it one node of a
	// passing trial printed; failRepeats the first failing trials' counts
	// (coverage.TrialRead.Repeats).
	passRepeats map[string]int
	failRepeats map[int]map[string]int
}

// newCampaignCoverage starts a campaign's coverage.
func newCampaignCoverage() *campaignCoverage {
	return &campaignCoverage{cov: coverage.New(faults.ReplayOf), first: map[coverage.Feature]int{},
		passing: map[int]int{}, failing: map[int][]int{}, passRepeats: map[string]int{}, failRepeats: map[int]map[string]int{}}
}

// maxUniqueTrials bounds the failing trials whose features no passing
// trial had are named: the summary lists ten.
const maxUniqueTrials = 10

// note counts a trial's features as passing or keeps a failing trial's.
func (cc *campaignCoverage) note(r *TrialResult, fs coverage.Features, repeats map[string]int) {
	failed := r.Outcome.Kind.IsFailure()
	if failed && len(cc.failing) >= maxUniqueTrials || !failed && r.Outcome.Kind != Pass {
		return
	}
	if failed {
		cc.failRepeats[r.Index] = repeats
	} else {
		for t, n := range repeats {
			cc.passRepeats[t] = max(cc.passRepeats[t], n)
		}
	}
	ids := make([]int, 0, len(fs))
	for _, f := range fs {
		id := cc.cov.ID(f)
		if !failed {
			cc.passing[id]++
		}
		ids = append(ids, id)
	}
	if failed {
		cc.failing[r.Index] = ids
	}
}

// unique names, on the first failing trials of results, the features no
// passing trial of the campaign showed: what sets them apart. Lines a
// node printed come first, then message kinds, then orderings: a failing
// trial of a real system holds dozens of orderings no passing trial had,
// and a line only it printed ("panic: ...") says more than any of them.
func (cc *campaignCoverage) unique(results []*TrialResult) {
	list := cc.cov.List()
	for _, r := range results {
		ids, ok := cc.failing[r.Index]
		if !ok {
			continue
		}
		var fs []coverage.Feature
		for _, id := range ids {
			if cc.passing[id] == 0 && id >= 1 && id <= len(list) {
				fs = append(fs, list[id-1])
			}
		}
		slices.SortStableFunc(fs, func(a, b coverage.Feature) int { return uniqueRank(a.Class) - uniqueRank(b.Class) })
		r.Unique = nil
		lines := 0
		for _, f := range fs {
			if f.Class == coverage.ClassTemplate {
				lines++
			}
			r.Unique = append(r.Unique, cc.cov.Describe(f))
		}
		r.Unique = slices.Insert(r.Unique, lines, cc.repeated(r.Index)...)
	}
}

// Lines a failing trial's node printed at least repeatFloor times, and
// more than repeatRatio times as often as any node of a passing trial,
// are named among its unique features: a livelock or a retry storm shows
// as a line every trial prints a few times, printed hundreds of times.
const (
	repeatFloor = 10
	repeatRatio = 4
)

// repeated names a failing trial's lines repeated beyond every passing
// trial's, the most repeated first (ties by template, for a stable
// order); a template no passing trial printed is named as unique already.
func (cc *campaignCoverage) repeated(trial int) []string {
	type rep struct {
		text  string
		n, of int
	}
	var reps []rep
	for text, n := range cc.failRepeats[trial] {
		of, ok := cc.passRepeats[text]
		if ok && n >= repeatFloor && n > repeatRatio*of {
			reps = append(reps, rep{text, n, of})
		}
	}
	slices.SortFunc(reps, func(a, b rep) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.text, b.text)
	})
	var out []string
	for _, r := range reps {
		name := cc.cov.Describe(coverage.Feature{Class: coverage.ClassTemplate, Key: r.text})
		out = append(out, fmt.Sprintf("%s ×%d (a passing trial's node: at most %d)", name, r.n, r.of))
	}
	return out
}

// uniqueRank orders a failing trial's unique features by how much each
// says to a reader: templates, kinds, orderings.
func uniqueRank(c coverage.Class) int {
	switch c {
	case coverage.ClassTemplate:
		return 0
	case coverage.ClassKind:
		return 1
	}
	return 2
}

// seen writes the features seen into c (CoverageSummary.Seen).
func (cc *campaignCoverage) seen(c *result.CoverageSummary) {
	c.Seen = c.Seen[:0]
	for _, f := range cc.cov.List() {
		c.Seen = append(c.Seen, result.SeenFeature{Class: f.Class.String(), Key: f.Key, First: cc.first[f], Trials: cc.cov.Count(f)})
	}
}

// addCoverage reads a finished trial's features (its ops and the lines its
// nodes printed) into the campaign's coverage: how many it showed first,
// and the curve. A trial whose output cannot be read adds its ops' alone.
// It returns the trial's features.
func addCoverage(cc *campaignCoverage, sum *Summary, r *TrialResult, log *slog.Logger) trialFeatures {
	if cc == nil {
		return trialFeatures{}
	}
	t := &coverage.Trial{Trace: &sched.Trace{Records: r.Records}}
	var nodes []string
	for _, n := range sum.Spec.Nodes {
		nodes = append(nodes, n.Name)
	}
	logs, err := coverage.ReadLogs(r.Dir, nodes)
	if err != nil {
		log.Warn("reading a trial's output for its coverage", "trial", r.Index, "err", err)
	}
	t.Logs = logs
	rd := cc.cov.Read(t)
	fs, where := rd.Features, rd.Where
	defer cc.note(r, fs, rd.Repeats)
	tf := trialFeatures{fs: fs, novelAt: -1, msgs: rd.Messages}
	for i, f := range fs {
		if where[i] >= 0 && cc.cov.ID(f) == 0 && (tf.novelAt < 0 || where[i] < tf.novelAt) {
			tf.novelAt = where[i]
		}
	}
	novel := cc.cov.Merge(fs)
	for _, f := range novel {
		cc.first[f] = r.Index
	}
	r.Novel = len(novel)
	c := sum.Coverage
	c.Features = cc.cov.Len()
	c.Kinds, c.Templates, c.Orderings = cc.cov.Classes()
	c.Curve = append(c.Curve, c.Features)
	r.Features = c.Features
	return tf
}
