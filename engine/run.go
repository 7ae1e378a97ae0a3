package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/explore"
	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/spec"
)

// Run runs a campaign: N trials of the spec, J at a time. When ctx is
// cancelled, Run stops the trials under way, tears their nodes and
// networks down and returns the summary of the trials finished before,
// with Interrupted set.
func Run(ctx context.Context, sp *spec.Spec, opts RunOptions) (*Summary, error) {
	// A spec loads without its images (spec is data): unpack them now,
	// unless the caller did.
	if err := image.Resolve(ctx, sp); err != nil {
		return nil, err
	}
	c, err := newCampaign(sp, opts)
	if err != nil {
		return nil, err
	}
	lock, err := lockOut(c.opts.OutDir)
	if err != nil {
		return nil, err
	}
	defer lock.unlock()
	if err := prepareOut(c.opts.OutDir, c.explicitOut, c.opts.Replace); err != nil {
		return nil, err
	}
	// Bad input first: it is what a user without root can mend too.
	if err := needPrivileges(); err != nil {
		return nil, err
	}
	start := time.Now()
	if c.n == 0 {
		return finish(c.sum, start, false), nil
	}
	if c.cov != nil {
		defer c.cov.seen(c.sum.Coverage)
		defer func() { c.cov.unique(c.sum.Results) }()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.ctx = ctx
	js, closeJobs, err := c.startJobs(ctx)
	if err != nil {
		return nil, err
	}
	defer closeJobs()
	if err := c.first(js[0]); err != nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			return finish(c.sum, start, true), nil
		}
		return nil, err
	}
	c.workers(js)
	if c.firstErr != nil && ctx.Err() == nil {
		return nil, c.firstErr
	}
	c.drain()
	// A shard's table goes into its result for the merge: shards writing
	// one shared file would each overwrite the others' learning.
	if c.hist != nil && c.histPath != "" && !c.sharded {
		if err := c.hist.Save(c.histPath); err != nil {
			return nil, fmt.Errorf("saving history: %w", err)
		}
	}
	return finish(c.sum, start, ctx.Err() != nil), nil
}

// campaign is one Run: its settings, what it learns as trials finish, and
// the state its jobs share. Memory grows with the trials finished, never
// with the trials asked for: finished trials wait in pending only until
// those before them are done.
type campaign struct {
	sp       *spec.Spec
	opts     RunOptions
	strategy string
	seed     int64
	// sh is the shard run (the whole campaign as shard 0 of 1 when not
	// sharded); n its number of trials. Positions 0..n-1 are the shard's
	// trials in order; without a shard a position is the trial's index.
	sh          Shard
	sharded     bool
	n, jobs     int
	explicitOut bool
	scheme      conflict.Scheme
	hist        *conflict.History // "+" strategies
	histPath    string
	cov         *campaignCoverage // nil for native runs
	corpus      *explore.Corpus   // explore
	sum         *Summary
	ctx         context.Context

	mu        sync.Mutex
	cond      *sync.Cond
	next      int                        // next position to hand out
	pending   map[int]*TrialResult       // finished, not yet counted
	reported  int                        // positions [0, reported) are counted
	plans     map[int]explore.Plan       // by trial, until counted
	analyses  map[int]*conflict.Analysis // by trial, until counted ("+" strategies)
	firstErr  error
	stop      bool
	stepsHint int
	expect    Windows
	frozen    learned
	frozenFor int
}

// newCampaign reads a campaign's settings from the spec and the options,
// and checks them before any network is built.
func newCampaign(sp *spec.Spec, opts RunOptions) (*campaign, error) {
	if opts.KeepTmp && opts.DropTmp {
		return nil, errors.New("run: keeping every trial's {{tmp}} directories and dropping them ask for opposite things")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c := &campaign{sp: sp, opts: opts, strategy: sp.Scheduler.Strategy, seed: sp.Scheduler.Seed, sh: opts.Shard,
		pending: map[int]*TrialResult{}, plans: map[int]explore.Plan{}, analyses: map[int]*conflict.Analysis{}, frozenFor: -1}
	c.cond = sync.NewCond(&c.mu)
	trials := sp.Trials
	if opts.Trials > 0 {
		trials = opts.Trials
	}
	if opts.Strategy != "" {
		c.strategy = opts.Strategy
	}
	if opts.Seed != nil {
		c.seed = *opts.Seed
	}
	if trials > spec.MaxTrials {
		return nil, fmt.Errorf("%d trials: at most %d", trials, spec.MaxTrials)
	}
	c.sharded = c.sh.Count > 0
	if !c.sharded {
		c.sh = Shard{Index: 0, Count: 1}
	}
	if c.sh.Index < 0 || c.sh.Index >= c.sh.Count {
		return nil, fmt.Errorf("shard %v: the index must be between 0 and %d", c.sh, c.sh.Count-1)
	}
	c.n = c.sh.Size(trials)
	c.jobs = min(max(opts.Jobs, 1), max(c.n, 1))
	if err := c.outDir(); err != nil {
		return nil, err
	}
	if err := c.learners(); err != nil {
		return nil, err
	}
	c.sum = &Summary{Spec: sp, Strategy: c.strategy, Seed: c.seed, Planned: trials, ByKind: map[OutcomeKind]int{}, History: c.hist}
	if c.hist != nil {
		c.sum.Census = conflict.NewCensus()
	}
	if c.sharded {
		c.sum.Shard = c.sh
	}
	if !c.opts.Native {
		c.cov = newCampaignCoverage()
		c.sum.Coverage = &result.CoverageSummary{}
		if c.corpus != nil {
			cov := c.cov.cov
			c.corpus.ClassOf = func(id int) int { return int(cov.ClassOf(id)) }
		}
	}
	return c, nil
}

// outDir settles the output directory: absolute, since nodes run in their
// own directories, where a relative {{tmp}} or {{trialdir}} would point
// nowhere.
func (c *campaign) outDir() error {
	// A shard's directory (OUT/shard-I-of-N) is lockstep's own, as the
	// default is: a job engine that retries a shard starts it over there.
	c.explicitOut = c.opts.OutDir != "" && !c.sharded
	if c.opts.OutDir == "" {
		c.opts.OutDir = filepath.Join("lockstep-out", c.sp.Name)
	}
	out, err := filepath.Abs(c.opts.OutDir)
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	c.opts.OutDir = out
	return nil
}

// learners checks the strategy and sets up what it learns from: the
// conflict history of a "+" strategy, the corpus of explore.
func (c *campaign) learners() error {
	var err error
	if c.scheme, err = conflict.ParseScheme(c.sp.Scheduler.Conflict.Scheme); err != nil {
		return err
	}
	if c.histPath = c.opts.History; c.histPath == "" {
		c.histPath = c.sp.Scheduler.Conflict.History
	}
	if c.opts.Native {
		c.strategy = "native"
		if c.opts.NativeLimit <= 0 {
			// The spec's own wall-clock guard: a fixed 5 s called every
			// trial of a 10 s client a hang.
			c.opts.NativeLimit = c.sp.Limits.RealTime
		}
		return nil
	}
	if ok, _ := exploring(c.strategy); ok {
		// Each generation of trials branches from the corpus as the
		// previous generations left it (see learnFrom).
		c.corpus = explore.New()
		if c.opts.CorpusRecords != 0 {
			c.corpus.MaxRecords = max(0, c.opts.CorpusRecords)
		}
		c.corpus.Aiming = aiming(c.sp.Faults)
		lasts, err := lasts(c.sp.Faults)
		if err != nil {
			return err
		}
		c.corpus.Lasts = lasts
		c.corpus.SymptomLines = len(c.opts.Symptom.TemplatesOrNil())
	} else if _, err := newStrategy(c.sp, c.strategy, nil); err != nil {
		return err
	}
	if !strings.HasSuffix(c.strategy, "+") {
		return nil
	}
	if c.histPath == "" {
		c.hist = conflict.NewHistory(c.scheme)
		return nil
	}
	c.hist, err = conflict.Load(c.histPath, c.scheme)
	return err
}

// startJobs builds the campaign's jobs, each with its network, pinned to
// a CPU of its own where one is free (pickCPUs), and watches their
// connections; the function returned closes them.
func (c *campaign) startJobs(ctx context.Context) ([]*job, func(), error) {
	cpus := pickCPUs(c.jobs)
	kernel := bpf.NewKernel()
	var js []*job
	var tk *tracker
	closeAll := func() {
		for _, j := range js {
			j.close()
		}
		if tk != nil {
			tk.close()
		}
	}
	for i := range c.jobs {
		pick := cpus[i%len(cpus)]
		if i >= len(cpus) {
			pick.claim = nil // the job that took it holds it
		}
		j, err := newJob(ctx, c.sp, pick, c.jobs, c.opts.OutDir, c.opts.Logger, kernel)
		if err != nil {
			for _, p := range cpus[min(i+1, len(cpus)):] {
				p.claim.release()
			}
			closeAll()
			return nil, nil, err
		}
		js = append(js, j)
	}
	if c.opts.Native {
		return js, closeAll, nil
	}
	if tk = newTracker(c.opts.Logger, kernel); tk != nil {
		for _, j := range js {
			if err := tk.watch(j); err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("connection tracking: %w", err)
			}
			j.track = tk
		}
	}
	return js, closeAll, nil
}

// runAt runs trial i with what the campaign had learned (the history and
// the corpus as earlier generations left them).
func (c *campaign) runAt(j *job, i int, l learned) (*TrialResult, error) {
	tp := trialParams{index: i, seed: TrialSeed(c.seed, i), stepsHint: c.stepsHint, expect: c.expect,
		traceAll: c.opts.TraceAll, keepTmp: c.opts.KeepTmp, dropTmp: c.opts.DropTmp, scheme: c.scheme.String(), frames: c.scheme.Frames(), symptom: c.opts.Symptom}
	if c.hist != nil && c.scheme.WantsMsg() {
		tp.msgBytes = conflict.MsgBytes
	}
	plan, err := trialStrategy(c.sp, c.strategy, l, &tp)
	if err != nil {
		return nil, err
	}
	if im, ok := tp.strategy.(interface{ LastImmediate() bool }); ok {
		tp.immediate = im.LastImmediate
	}
	r, err := j.runTrial(c.ctx, tp)
	if err == nil && c.corpus != nil {
		c.planned(r, i, plan, tp.strategy)
	}
	if err != nil || !c.opts.Verify || !r.Outcome.Kind.IsFailure() || r.TracePath == "" || c.ctx.Err() != nil {
		return r, err
	}
	return r, j.verify(c.ctx, r, tp)
}

// runOne runs the trial at position p, once the trials of earlier
// generations have been counted when the strategy learns from them; nil
// when the campaign stopped meanwhile.
func (c *campaign) runOne(j *job, p int) (*TrialResult, error) {
	i := c.sh.Trial(p)
	if c.opts.Native {
		return j.runNative(c.ctx, i, TrialSeed(c.seed, i), c.opts.NativeLimit)
	}
	var l learned
	if c.hist != nil || c.corpus != nil {
		c.mu.Lock()
		b := p / historyBatch
		for c.frozenFor < b {
			// Wait until every trial of earlier batches is merged.
			if c.reported >= min(b*historyBatch, c.n) {
				c.frozen, c.frozenFor = learnFrom(c.hist, c.corpus, c.cov), b
				break
			}
			if c.stop || c.firstErr != nil || c.ctx.Err() != nil {
				c.mu.Unlock()
				return nil, nil
			}
			c.cond.Wait()
		}
		l = c.frozen
		c.mu.Unlock()
	}
	return c.runAt(j, i, l)
}

// record takes a finished trial and counts, in trial order, every trial
// whose predecessors are all counted.
func (c *campaign) record(p int, r *TrialResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[p] = r
	if c.hist != nil {
		a := conflict.Analyze(r.Records, c.scheme)
		c.hist.Update(a)
		st := a.Stats()
		r.Conflict = &st
		c.analyses[r.Index] = a
	}
	if c.opts.StopOnFirst && r.Outcome.Kind.IsFailure() && (c.opts.Symptom == nil || reproduces(c.opts.Symptom, r)) {
		c.stop = true
	}
	for {
		r, ok := c.pending[c.reported]
		if !ok {
			break
		}
		delete(c.pending, c.reported)
		c.count(r)
		if c.opts.Progress != nil {
			c.opts.Progress(r)
		}
		if c.opts.DropRecords {
			r.Records = nil
		}
		c.reported++
	}
	c.cond.Broadcast()
}

// count adds a trial to the summary, its features to the coverage and
// corpus: in trial order, whatever the jobs, so that the same campaign
// gives the same coverage and corpus.
func (c *campaign) count(r *TrialResult) {
	tf := addCoverage(c.cov, c.sum, r, c.opts.Logger)
	tf.plan = c.plans[r.Index]
	delete(c.plans, r.Index)
	keep(c.corpus, c.cov, c.sum, r, tf)
	c.symptom(r)
	c.sum.Add(r)
	if r.Conflict != nil {
		c.sum.Stats = append(c.sum.Stats, *r.Conflict)
	}
	if a := c.analyses[r.Index]; a != nil {
		delete(c.analyses, r.Index)
		c.sum.Census.Add(a)
	}
}

// symptom notes how far a trial got towards the campaign's symptom: the
// best match so far, and whether it reproduced it (printed its last line,
// or failed as its failure line says).
func (c *campaign) symptom(r *TrialResult) {
	sy := c.opts.Symptom
	if sy == nil {
		return
	}
	s := c.sum.Symptom
	if s == nil {
		s = &result.SymptomSummary{Lines: len(sy.Templates), BestTrial: -1, Reproduced: -1}
		c.sum.Symptom = s
	}
	if r.Symptom > s.Best {
		s.Best, s.BestTrial = r.Symptom, r.Index
	}
	if reproduces(sy, r) && s.Reproduced < 0 {
		s.Reproduced = r.Index
	}
}

// reproduces says whether a trial reproduced a symptom: it printed its
// last line (the property "symptom"), or failed as its failure line says.
func reproduces(sy *coverage.Symptom, r *TrialResult) bool {
	o := r.Outcome
	return o.Kind == PropertyViolated && o.Property == symptomProperty.Name ||
		sy.Failure != "" && o.Kind.IsFailure() && coverage.Same(sy.Failure, coverage.TemplateOf(o.Detail))
}

// first runs trial 0 on its own: its step count is PCT's hint for every
// other trial and its windows are their expected lengths, for step
// triggers, whatever the order in which they finish, the jobs and shards.
func (c *campaign) first(j *job) error {
	var r0 *TrialResult
	var err error
	if c.sh.Index == 0 || c.opts.Native {
		r0, err = c.runOne(j, 0)
	} else {
		// Another shard owns trial 0, but its step count is this shard's
		// hint too: run it, without counting it or learning from it.
		r0, err = c.runAt(j, 0, learnFrom(c.hist, nil, c.cov))
	}
	if err != nil || c.ctx.Err() != nil {
		return err
	}
	if o := r0.Outcome; o.Kind == Error && o.Node != "" {
		// A node that cannot start in the first trial will not start in
		// any: say why now rather than after N identical errors.
		return fmt.Errorf("stopped after trial 0, where node %s could not start: %s (output in %s)", o.Node, o.Detail, r0.Dir)
	}
	c.stepsHint = max(r0.Outcome.Steps, 1)
	c.expect = r0.Windows
	if r0.Index != c.sh.Trial(0) {
		if err := clearTrial(r0.Dir); err != nil {
			return fmt.Errorf("removing the hint trial's directory: %w", err)
		}
		return nil
	}
	c.next = 1
	c.record(0, r0)
	return nil
}

// workers runs the remaining trials on the jobs until they are done, the
// campaign stops (a failure with StopOnFirst, an error) or ctx is
// cancelled.
func (c *campaign) workers(js []*job) {
	var wg sync.WaitGroup
	for _, j := range js {
		wg.Add(1)
		go func(j *job) {
			defer wg.Done()
			for c.work(j) {
			}
		}(j)
	}
	wg.Wait()
}

// work runs the next trial on j; false when there is none to run.
func (c *campaign) work(j *job) bool {
	c.mu.Lock()
	if c.next >= c.n || c.stop || c.firstErr != nil || c.ctx.Err() != nil {
		c.mu.Unlock()
		return false
	}
	p := c.next
	c.next++
	c.mu.Unlock()
	r, err := c.runOne(j, p)
	if c.ctx.Err() != nil {
		// The trial's end came from ctx: its error is no lockstep error,
		// and its result may be cut short (nodes killed, checker
		// stopped), so it is not counted.
		c.cond.Broadcast()
		return false
	}
	if err != nil {
		c.mu.Lock()
		if c.firstErr == nil {
			c.firstErr = err
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		return false
	}
	if r == nil {
		return false
	}
	c.record(p, r)
	return true
}

// drain counts the trials that finished after a gap (an earlier one was
// cut short): they are still findings.
func (c *campaign) drain() {
	for p := c.reported + 1; len(c.pending) > 0; p++ {
		if r, ok := c.pending[p]; ok {
			delete(c.pending, p)
			c.count(r)
		}
	}
}
