package engine

import (
	"context"
	"fmt"
	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/internal/procfs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/explore"
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
	Replace     bool
	StopOnFirst bool
	TraceAll    bool
	// KeepTmp keeps the nodes' {{tmp}} directories of passing trials too
	// (a failing trial's are always kept).
	KeepTmp bool
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
}

// historyBatch is how many trials share one frozen view of the history
// table: trial i learns from every trial of earlier batches. A fixed batch
// keeps results identical whatever --jobs is.
const historyBatch = 8

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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	trials := sp.Trials
	if opts.Trials > 0 {
		trials = opts.Trials
	}
	strategy := sp.Scheduler.Strategy
	if opts.Strategy != "" {
		strategy = opts.Strategy
	}
	seed := sp.Scheduler.Seed
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	if trials > spec.MaxTrials {
		return nil, fmt.Errorf("%d trials: at most %d", trials, spec.MaxTrials)
	}
	sh := opts.Shard
	sharded := sh.Count > 0
	if !sharded {
		sh = Shard{Index: 0, Count: 1}
	}
	if sh.Index < 0 || sh.Index >= sh.Count {
		return nil, fmt.Errorf("shard %v: the index must be between 0 and %d", sh, sh.Count-1)
	}
	// Positions 0..n-1 are the shard's trials in order; without a shard
	// a position is the trial's index.
	n := sh.Size(trials)
	jobs := min(max(opts.Jobs, 1), max(n, 1))
	// A shard's directory (OUT/shard-I-of-N) is lockstep's own, as the
	// default is: a job engine that retries a shard starts it over there.
	explicitOut := opts.OutDir != "" && !sharded
	if opts.OutDir == "" {
		opts.OutDir = filepath.Join("lockstep-out", sp.Name)
	}
	// Nodes run in their own directories: a relative {{tmp}} or
	// {{trialdir}} would point nowhere from there.
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	opts.OutDir = out
	lock, err := lockOut(out)
	if err != nil {
		return nil, err
	}
	defer lock.unlock()
	if err := prepareOut(out, explicitOut, opts.Replace); err != nil {
		return nil, err
	}
	scheme, err := conflict.ParseScheme(sp.Scheduler.Conflict.Scheme)
	if err != nil {
		return nil, err
	}
	plus := strings.HasSuffix(strategy, "+")
	histPath := opts.History
	if histPath == "" {
		histPath = sp.Scheduler.Conflict.History
	}
	var hist *conflict.History
	if plus {
		if histPath != "" {
			if hist, err = conflict.Load(histPath, scheme); err != nil {
				return nil, err
			}
		} else {
			hist = conflict.NewHistory(scheme)
		}
	}
	// Validate the strategy name before building networks.
	if opts.Native {
		strategy, plus, hist = "native", false, nil
		if opts.NativeLimit <= 0 {
			// The spec's own wall-clock guard: a fixed 5 s called every
			// trial of a 10 s client a hang.
			opts.NativeLimit = sp.Limits.RealTime
		}
	} else if _, err := newStrategy(sp, strategy, nil); err != nil && strategy != Explore {
		return nil, err
	}
	sum := &Summary{Spec: sp, Strategy: strategy, Seed: seed, Planned: trials, ByKind: map[OutcomeKind]int{}, History: hist}
	if sharded {
		sum.Shard = sh
	}
	start := time.Now()
	if n == 0 {
		return finish(sum, start, false), nil
	}
	var cov *campaignCoverage
	if !opts.Native {
		cov = &campaignCoverage{cov: coverage.New(faults.ReplayOf), first: map[coverage.Feature]int{}}
		sum.Coverage = &result.CoverageSummary{}
		defer cov.seen(sum.Coverage)
	}
	// An exploring campaign keeps the trials that showed something new;
	// each generation of trials branches from the corpus as the previous
	// generations left it (see learnFrom).
	var corpus *explore.Corpus
	if strategy == Explore {
		corpus = explore.New()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cpus := quietestFirst(allowedCPUs(), rtThreadsByCPU())
	js := make([]*job, jobs)
	for i := range js {
		j, err := newJob(ctx, sp, cpus[i%len(cpus)], jobs, opts.OutDir, opts.Logger)
		if err != nil {
			for _, o := range js[:i] {
				o.close()
			}
			return nil, err
		}
		js[i] = j
	}
	defer func() {
		for _, j := range js {
			j.close()
		}
	}()
	if !opts.Native {
		if tk := newTracker(opts.Logger); tk != nil {
			defer tk.close()
			for _, j := range js {
				if err := tk.watch(j); err != nil {
					return nil, fmt.Errorf("connection tracking: %w", err)
				}
				j.track = tk
			}
		}
	}

	// Memory grows with the trials finished, never with the trials asked
	// for: finished trials wait in pending only until those before them
	// are done.
	var (
		mu        sync.Mutex
		cond      = sync.NewCond(&mu)
		next      int                      // next trial index to hand out
		pending   = map[int]*TrialResult{} // finished, not yet reported
		reported  int                      // trials [0, reported) are done and counted
		firstErr  error
		stop      bool
		stepsHint int
		expect    Windows
		frozen    learned
		frozenFor = -1
		plans     = map[int]explore.Plan{} // by trial, until counted
	)
	// runAt runs trial i with what the campaign had learned (the history
	// and the corpus as earlier generations left them).
	runAt := func(j *job, i int, l learned) (*TrialResult, error) {
		tp := trialParams{index: i, seed: TrialSeed(seed, i), stepsHint: stepsHint, expect: expect,
			traceAll: opts.TraceAll, keepTmp: opts.KeepTmp, scheme: scheme.String(), frames: scheme.Frames()}
		plan, err := trialStrategy(sp, strategy, l, &tp)
		if err != nil {
			return nil, err
		}
		if im, ok := tp.strategy.(interface{ LastImmediate() bool }); ok {
			tp.immediate = im.LastImmediate
		}
		r, err := j.runTrial(ctx, tp)
		if err == nil && corpus != nil {
			r.Plan = plan.String()
			mu.Lock()
			plans[i] = plan
			mu.Unlock()
			if b, ok := tp.strategy.(*sched.Branch); ok && b.Diverged > 0 {
				r.Plan += fmt.Sprintf(" (the prefix diverged at step %d)", b.Diverged)
			}
			opts.Logger.Info("explore", "trial", i, "plan", r.Plan, "outcome", r.Outcome.Kind)
		}
		if err != nil || !opts.Verify || !r.Outcome.Kind.IsFailure() || r.TracePath == "" || ctx.Err() != nil {
			return r, err
		}
		return r, j.verify(ctx, r, tp)
	}
	// Trial 0 runs first on its own: its step count is PCT's hint for
	// every other trial, whatever the order in which they finish.
	runOne := func(j *job, p int) (*TrialResult, error) {
		i := sh.Trial(p)
		if opts.Native {
			return j.runNative(ctx, i, TrialSeed(seed, i), opts.NativeLimit)
		}
		var l learned
		if hist != nil || corpus != nil {
			mu.Lock()
			b := p / historyBatch
			for frozenFor < b {
				// Wait until every trial of earlier batches is merged.
				if reported >= min(b*historyBatch, n) {
					frozen, frozenFor = learnFrom(hist, corpus, cov), b
					break
				}
				if stop || firstErr != nil || ctx.Err() != nil {
					mu.Unlock()
					return nil, nil
				}
				cond.Wait()
			}
			l = frozen
			mu.Unlock()
		}
		return runAt(j, i, l)
	}
	record := func(p int, r *TrialResult) {
		mu.Lock()
		defer mu.Unlock()
		pending[p] = r
		if hist != nil {
			a := conflict.Analyze(r.Records, scheme)
			hist.Update(a)
			st := a.Stats()
			r.Conflict = &st
		}
		if r.Outcome.Kind.IsFailure() && opts.StopOnFirst {
			stop = true
		}
		// Count and report in trial order.
		for {
			r, ok := pending[reported]
			if !ok {
				break
			}
			delete(pending, reported)
			// In trial order, whatever the jobs: the same campaign gives
			// the same coverage and corpus.
			tf := addCoverage(cov, sum, r, opts.Logger)
			tf.plan = plans[r.Index]
			delete(plans, r.Index)
			keep(corpus, cov, sum, r, tf)
			sum.Add(r)
			if r.Conflict != nil {
				sum.Stats = append(sum.Stats, *r.Conflict)
			}
			if opts.Progress != nil {
				opts.Progress(r)
			}
			reported++
		}
		cond.Broadcast()
	}
	// interrupted says whether a trial's end came from ctx: its error is
	// no lockstep error, and its result may be cut short (nodes killed,
	// checker stopped), so it is not counted.
	interrupted := func() bool { return ctx.Err() != nil }
	var r0 *TrialResult
	if sh.Index == 0 || opts.Native {
		r0, err = runOne(js[0], 0)
	} else {
		// Another shard owns trial 0, but its step count is this shard's
		// hint too: run it, without counting it or learning from it.
		r0, err = runAt(js[0], 0, learnFrom(hist, nil, cov))
	}
	switch {
	case interrupted():
		return finish(sum, start, true), nil
	case err != nil:
		return nil, err
	}
	if o := r0.Outcome; o.Kind == Error && o.Node != "" {
		// A node that cannot start in the first trial will not start in
		// any: say why now rather than after N identical errors.
		return nil, fmt.Errorf("stopped after trial 0, where node %s could not start: %s (output in %s)", o.Node, o.Detail, r0.Dir)
	}
	stepsHint = max(r0.Outcome.Steps, 1)
	// Trial 0's windows are every other trial's expected lengths, for
	// step triggers: whatever the jobs, shards and order, a seed's
	// schedule is the same.
	expect = r0.Windows
	if r0.Index == sh.Trial(0) {
		next = 1
		record(0, r0)
	} else if err := clearTrial(r0.Dir); err != nil {
		return nil, fmt.Errorf("removing the hint trial's directory: %w", err)
	}

	var wg sync.WaitGroup
	for _, j := range js {
		wg.Add(1)
		go func(j *job) {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= n || stop || firstErr != nil || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				p := next
				next++
				mu.Unlock()
				r, err := runOne(j, p)
				if interrupted() {
					cond.Broadcast()
					return
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					cond.Broadcast()
					mu.Unlock()
					return
				}
				if r == nil {
					return
				}
				record(p, r)
			}
		}(j)
	}
	wg.Wait()
	if firstErr != nil && !interrupted() {
		return nil, firstErr
	}
	// Trials that finished after a gap (an earlier one was cut short) are
	// still findings.
	for p := reported + 1; len(pending) > 0; p++ {
		if r, ok := pending[p]; ok {
			delete(pending, p)
			tf := addCoverage(cov, sum, r, opts.Logger)
			tf.plan = plans[r.Index]
			delete(plans, r.Index)
			keep(corpus, cov, sum, r, tf)
			sum.Add(r)
			if r.Conflict != nil {
				sum.Stats = append(sum.Stats, *r.Conflict)
			}
		}
	}
	// A shard's table goes into its result for the merge: shards writing
	// one shared file would each overwrite the others' learning.
	if hist != nil && histPath != "" && !sharded {
		if err := hist.Save(histPath); err != nil {
			return nil, fmt.Errorf("saving history: %w", err)
		}
	}
	return finish(sum, start, interrupted()), nil
}

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

// allowedCPUs lists the CPUs this process may run on, so that jobs pin
// themselves inside a taskset or cpuset (two campaigns side by side:
// `taskset -c 1 lockstep run ...`) rather than always from CPU 0.
func allowedCPUs() []int {
	var set unix.CPUSet
	var cpus []int
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		for c := 0; c < len(set)*64; c++ {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
	}
	if len(cpus) == 0 {
		return []int{0}
	}
	return cpus
}

// rtThreadsByCPU counts the user-space threads under a real-time policy
// (SCHED_FIFO or SCHED_RR) on each CPU: those of other lockstep campaigns,
// whose tracees run SCHED_RR on their job's CPU. Kernel threads, which
// every CPU has alike, are left out.
func rtThreadsByCPU() map[int]int {
	count := map[int]int{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if c := p.Name()[0]; c >= '0' && c <= '9' {
			countRTThreads(p.Name(), count)
		}
	}
	return count
}

// countRTThreads adds process pid's real-time threads to count, by CPU.
func countRTThreads(pid string, count map[int]int) {
	tasks, _ := os.ReadDir(filepath.Join("/proc", pid, "task"))
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "task", t.Name(), "stat"))
		if err != nil {
			continue
		}
		s, err := procfs.ParseStat(b)
		if err != nil {
			continue
		}
		flags, _ := s.Field(procfs.FieldFlags)
		cpu, _ := s.Field(procfs.FieldProcessor)
		policy, ok := s.Field(procfs.FieldPolicy)
		if !ok {
			continue
		}
		const pfKthread = 0x00200000
		if flags&pfKthread == 0 && (policy == unix.SCHED_FIFO || policy == unix.SCHED_RR) {
			count[int(cpu)]++
		}
	}
}

// quietestFirst orders cpus by how many real-time threads already run on
// each, fewest first (ties keep their order): a campaign beside another
// then takes the other CPU rather than sharing one round-robin queue with
// its tracees, which slows both and makes their schedules depend on it.
func quietestFirst(cpus []int, rt map[int]int) []int {
	out := slices.Clone(cpus)
	slices.SortStableFunc(out, func(a, b int) int { return rt[a] - rt[b] })
	return out
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
	fs, where := cc.cov.FeaturesAt(t)
	tf := trialFeatures{fs: fs, novelAt: -1}
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
