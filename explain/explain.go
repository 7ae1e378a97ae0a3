package explain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/safefs"
	"github.com/lockstep-dev/lockstep/sched"
)

// Options bound and direct an explanation.
type Options struct {
	// Budget bounds the real time spent; past it the minimization stops
	// where it is (Explanation.OneMinimal is then false) and what is left
	// is skipped. 0 means DefaultBudget.
	Budget time.Duration
	// Out is the directory for the runs' trial directories and the
	// minimized trace.
	Out string
	// Logger reports progress (nil: none).
	Logger *slog.Logger
	// Continuations is how many runs with the campaign's strategy measure
	// the failure's probability after each prefix (0: DefaultContinuations;
	// negative: no curve).
	Continuations int
}

// DefaultContinuations is Options.Continuations' default.
const DefaultContinuations = 10

// DefaultBudget bounds an explanation when Options.Budget is 0.
const DefaultBudget = 5 * time.Minute

// Explanation is what Explain found.
type Explanation struct {
	Trace   string        `json:"trace"`
	Outcome sched.Outcome `json:"outcome"`
	// Failure is what a run must show to count as the same failure.
	Failure string `json:"failure"`
	// Ops and Decisions count the trace's released ops and its departures
	// from the default order; MinimizedOps the ops of the run with only
	// the minimal decisions forced.
	Ops          int `json:"ops"`
	Decisions    int `json:"decisions"`
	MinimizedOps int `json:"minimized_ops"`
	// MinimizedTrace is that run's trace; MinimizedReplays says that
	// `lockstep replay` ran it again to the same failure, op for op, when
	// explain tried, and MinimizedDiverged what its replay did otherwise.
	MinimizedTrace    string `json:"minimized_trace,omitempty"`
	MinimizedReplays  bool   `json:"minimized_replays,omitempty"`
	MinimizedDiverged string `json:"minimized_diverged,omitempty"`
	// OneMinimal says removing any one of Races' decisions made the failure
	// go away (false when the budget ran out first), each checked by a run
	// of its own after the minimization: Checked counts those runs (a
	// decision flipped, that is left to the default order, the others
	// kept), and Dropped the decisions the check found the failure did not
	// need (their run without them still failed), after which the rest was
	// minimized and checked again.
	OneMinimal bool `json:"one_minimal"`
	Checked    int  `json:"checked"`
	Dropped    int  `json:"dropped,omitempty"`
	// Default says the failure needs no decision: the default order fails.
	Default bool `json:"default,omitempty"`
	// Faults are the trace's faults, each taken out alone with every
	// other decision kept, before the minimization (neededFaults).
	Faults []FaultVerdict `json:"faults,omitempty"`
	// Chance is the faults alone with the order left to the campaign's
	// strategy, where the default order loses the failure (see Chance).
	Chance *Chance `json:"chance,omitempty"`
	Races  []Race  `json:"races"`
	// Curve is the failure's probability after prefixes of the trace,
	// each continued with the campaign's strategy, faults and delays drawn
	// afresh; Jump is where it rises most from one op to the next: the
	// decisive step.
	Curve []Point `json:"curve,omitempty"`
	Jump  *Jump   `json:"jump,omitempty"`
	// Slice are the steps of the minimized trace in the failure's causal
	// past (see Slice).
	Slice []int `json:"slice,omitempty"`
	// Runs is how many trials explain ran; Elapsed its real time;
	// TrialTime the real time of one replay of the trace.
	Runs      int           `json:"runs"`
	Elapsed   time.Duration `json:"elapsed"`
	TrialTime time.Duration `json:"trial_time"`
	// Notes say what explain could not do (the budget ran out, a flip
	// could not be tried).
	Notes []string `json:"notes,omitempty"`
	// Records are the minimized run's ops (for rendering), not encoded.
	Records []sched.Record `json:"-"`
}

// explainer holds one explanation's state.
type explainer struct {
	rr       *engine.Rerunner
	want     failure
	deadline time.Time
	log      *slog.Logger
	runs     int
	cache    map[string]failure
	// injects maps each injected decision of the trace to the op it
	// follows: a decision anchored on an injection left out of a subset
	// is anchored on what that injection followed instead.
	injects map[sched.Key]*sched.Key
	// withouts are the runs without one decision of the minimized set,
	// by subsetKey: window and reversedRace both read the same run's
	// records, so it runs once.
	withouts map[string]*forcedRun
	// track is the replay the decisions were read from: a forced run
	// follows it while it releases its ops (sched.Forced.Follow).
	track []sched.Record
	// fake, set by tests, stands for the rerunner in forced runs: what
	// forcing ds gives, so that minimization and its check can be tried
	// on a failure whose verdicts a test chooses (noise included).
	fake func(ds []sched.Decision) *engine.TrialResult
	// timed is how many faults the minimization made due at their times
	// (atTheirTimes), 0 if it kept the trace's anchors.
	timed int
	// curveAt is when a minimization that still needs most of a long
	// trace's decisions stops, leaving the rest of the budget to the
	// probability curve (zero: no curve); toCurve says it did.
	curveAt time.Time
	toCurve bool
	// out is the directory the explanation writes its traces into.
	out string
}

// anchor re-anchors the decisions of ds whose After is an injected op
// that ds does not inject: on the op that injection came after. Without
// it a decision would wait for an op that never comes, and an advance
// kept only as the anchor of a fault would look necessary.
func (e *explainer) anchor(ds []sched.Decision) []sched.Decision {
	in := map[sched.Key]bool{}
	for _, d := range ds {
		if d.Kind == sched.InjectDecision {
			in[d.Key] = true
		}
	}
	var out []sched.Decision
	for i, d := range ds {
		if d.Timed {
			continue // due at its time, whatever came before
		}
		a := d.After
		for a != nil && !in[*a] {
			prev, ok := e.injects[*a]
			if !ok {
				break
			}
			a = prev
		}
		if a != d.After {
			if out == nil {
				out = append([]sched.Decision(nil), ds...)
			}
			out[i].Anchor(a)
		}
	}
	if out == nil {
		return ds
	}
	return out
}

// errBudget says the budget ran out.
var errBudget = errors.New("budget spent")

// run runs the trial once with the decisions forced. choices, when not
// nil, gets the ops offered at each decision (a Recorder's), which name
// the run's connections as its forced strategy named them (sched.Keys).
func (e *explainer) run(ctx context.Context, ds []sched.Decision, keep bool, choices *[][]sched.Op) (*engine.TrialResult, error) {
	if e.fake != nil {
		if time.Now().After(e.deadline) {
			return nil, errBudget
		}
		e.runs++
		return e.fake(ds), nil
	}
	var s sched.Strategy = e.forced(ds)
	var rec *sched.Recorder
	if choices != nil {
		rec = &sched.Recorder{Strategy: s}
		s = rec
	}
	res, err := e.runWith(ctx, s, keep)
	if rec != nil {
		*choices = rec.Choices
	}
	return res, err
}

// forced is the strategy of a run that forces ds, following the trace
// while it can.
func (e *explainer) forced(ds []sched.Decision) *sched.Forced {
	f := sched.NewForced(e.anchor(ds), faults.ReplayOf)
	f.Follow(e.track)
	return f
}

// runWith runs the trial once under s, within the budget.
func (e *explainer) runWith(ctx context.Context, s sched.Strategy, keep bool) (*engine.TrialResult, error) {
	if time.Now().After(e.deadline) {
		return nil, errBudget
	}
	res, err := e.rr.Run(ctx, s, keep)
	if err != nil {
		return nil, err
	}
	e.runs++
	return res, nil
}

// tries says whether ds, other decisions than those explain holds (what
// they are, and how many of what changed), give the failure, and logs it.
func (e *explainer) tries(ctx context.Context, ds []sched.Decision, what, changed string, n int) (bool, error) {
	ok, err := e.fails(ctx, ds)
	if err == nil {
		e.log.Info(what, changed, n, "same failure", ok)
	}
	return ok, err
}

// fails says whether forcing ds gives the failure.
func (e *explainer) fails(ctx context.Context, ds []sched.Decision) (bool, error) {
	got, err := e.outcome(ctx, ds)
	return got.is(e.want), err
}

// outcome is the failure forcing ds gives (a pass is one too), run once
// per set.
func (e *explainer) outcome(ctx context.Context, ds []sched.Decision) (failure, error) {
	key := subsetKey(ds)
	if v, ok := e.cache[key]; ok {
		return v, nil
	}
	res, err := e.run(ctx, ds, false, nil)
	if err != nil {
		return failure{}, err
	}
	got := failureOf(res)
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.log.Debug("forced run", "decisions", len(ds), "outcome", got.String(), "same", got.is(e.want), "detail", res.Outcome.Detail, "faults", faultsOf(res))
	}
	e.cache[key] = got
	return got, nil
}

// faultsOf is what faults a run made and where, for the debug log (read
// only when it is on: it walks every record of the run): a
// forced fault that lands elsewhere than the trace's, or not at all,
// explains a decision kept for no cause the schedule shows.
func faultsOf(res *engine.TrialResult) []string {
	var fs []string
	for i, r := range res.Records {
		if r.Op.Kind.IsFault() {
			fs = append(fs, fmt.Sprintf("%d %s %s %s", i+1, r.Op.Kind, r.Op.Node, r.Op.Hit))
		}
	}
	return fs
}

// without runs set with its decision i left out, once per such subset.
func (e *explainer) without(ctx context.Context, set []sched.Decision, i int) (*engine.TrialResult, error) {
	w, err := e.withoutRun(ctx, set, i)
	if err != nil {
		return nil, err
	}
	return w.res, nil
}

// forcedRun is a forced run's result and the keys of its records, as its
// forced strategy named the ops (sched.Keys with the run's choices).
type forcedRun struct {
	res  *engine.TrialResult
	keys []sched.Key
}

// withoutRun is without with the run's keys.
func (e *explainer) withoutRun(ctx context.Context, set []sched.Decision, i int) (*forcedRun, error) {
	ds := append(append([]sched.Decision(nil), set[:i]...), set[i+1:]...)
	key := subsetKey(ds)
	if w, ok := e.withouts[key]; ok {
		return w, nil
	}
	var choices [][]sched.Op
	res, err := e.run(ctx, ds, false, &choices)
	if err != nil {
		return nil, err
	}
	if e.withouts == nil {
		e.withouts = map[string]*forcedRun{}
	}
	w := &forcedRun{res: res, keys: sched.Keys(res.Records, choices)}
	e.withouts[key] = w
	return w, nil
}

func subsetKey(ds []sched.Decision) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s|%v|%v|%t;", d.Kind, d.Key, d.After, d.Timed)
	}
	return b.String()
}

// Explain explains the failing trace at path.
func Explain(ctx context.Context, path string, opts Options) (*Explanation, error) {
	start := time.Now()
	// The trace first: forTrace makes the output directory beside it.
	tr, err := engine.LoadTrace(path)
	if err != nil {
		return nil, err
	}
	if tr.Outcome == nil {
		return nil, fmt.Errorf("%s: %w", path, engine.ErrCutShort)
	}
	if !tr.Outcome.Kind.IsFailure() {
		return nil, fmt.Errorf("%s: the trace did not fail (outcome %v): nothing to explain", path, tr.Outcome)
	}
	if opts, err = opts.forTrace(path); err != nil {
		return nil, err
	}
	rr, err := engine.NewRerunner(ctx, tr, filepath.Join(opts.Out, "runs"), opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rr.Close()
	ex := &Explanation{Trace: path, Outcome: *tr.Outcome, Ops: len(tr.Records)}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &explainer{rr: rr, deadline: start.Add(opts.Budget), log: log, cache: map[string]failure{}, injects: map[sched.Key]*sched.Key{}, out: opts.Out}
	if opts.Continuations >= 0 {
		e.curveAt = start.Add(opts.Budget * 2 / 3)
	}
	res, all, err := e.decisions(ctx, ex, tr)
	if err != nil {
		return nil, err
	}
	if all, err = e.neededFaults(ctx, ex, all); err != nil {
		return nil, err
	}
	if err := e.chance(ctx, ex, all, tr.Header.Strategy, opts.Continuations, start.Add(opts.Budget/3)); err != nil {
		return nil, err
	}
	min, err := e.minimal(ctx, ex, all, opts.Budget)
	if err != nil {
		return nil, err
	}
	mres, choices, err := e.minimized(ctx, ex, min, opts.Out)
	if err != nil {
		return nil, err
	}
	syms := newSymbolizer(rr.Spec)
	syms.kinds = coverage.NewNamer(tr)
	hard := e.deadline
	if e.toCurve {
		// Hundreds of decisions, each a course of the run rather than a
		// race: named by what needs no run, the rest of the budget left
		// to the curve.
		e.deadline = time.Now()
	}
	ex.Races, err = e.name(ctx, min, newFailingRun(mres.Records, choices), rr.Spec, syms)
	e.deadline = hard
	if err != nil && !errors.Is(err, errBudget) {
		return nil, err
	}
	ex.Notes = append(ex.Notes, syms.hints...)
	if errors.Is(err, errBudget) {
		ex.Notes = append(ex.Notes, "the budget ran out before every race was flipped")
	}
	ex.Slice = Slice(mres.Records, FailingNode(mres.Outcome.Node))
	if err := e.probability(ctx, ex, tr.Header.Strategy, res.Records, opts.Continuations, syms); err != nil {
		return nil, err
	}
	ex.Runs = e.runs
	ex.Elapsed = time.Since(start)
	return ex, nil
}

// forTrace fills in the options' defaults for explaining the trace at
// path (the logger stays: nil gives the engine's warnings on stderr),
// refuses an output directory that holds the trace (its runs'
// directories are replaced), and makes one in the trace's directory
// through no link (engine.OutBelowTrace).
func (opts Options) forTrace(path string) (Options, error) {
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Out == "" {
		opts.Out = filepath.Join(filepath.Dir(path), "explain")
	}
	if abs, err := filepath.Abs(path); err == nil {
		if out, err := filepath.Abs(opts.Out); err == nil && strings.HasPrefix(abs, out+string(filepath.Separator)) {
			return opts, fmt.Errorf("explaining into %s would delete the trace %s: choose another output directory", opts.Out, path)
		}
	}
	// The default lies in the trial's directory, which its nodes could
	// write: a link they left there must not take explain's runs and
	// traces elsewhere.
	return opts, engine.OutBelowTrace(path, opts.Out, filepath.Join("runs", "trials"))
}

// decisions replays the trace, recording the choices offered at each of
// its decisions, and reads its decisions from them; it fills ex's failure
// and counts.
func (e *explainer) decisions(ctx context.Context, ex *Explanation, tr *sched.Trace) (*engine.TrialResult, []sched.Decision, error) {
	t0 := time.Now()
	rec := &sched.Recorder{Strategy: sched.NewReplay(tr, sched.NewReplayTail(100), faults.ReplayOf)}
	res, err := e.rr.Run(ctx, rec, false)
	if err != nil {
		return nil, nil, err
	}
	e.runs++
	ex.TrialTime = time.Since(t0)
	if res.Outcome.Kind != tr.Outcome.Kind {
		return nil, nil, fmt.Errorf("%s does not replay: the replay ended %s, the trace %s", ex.Trace, res.Outcome, tr.Outcome)
	}
	e.want = failureOf(res)
	e.track = res.Records
	ex.Failure = e.want.String()
	all, err := sched.Decisions(res.Records, rec.Choices)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the decisions of %s: %w", ex.Trace, err)
	}
	ex.Decisions = len(all)
	// Faults anchored on messages, when forcing every decision so anchored
	// still fails (one run, which ddmin's first then finds remembered).
	if moved, n := messageAnchors(all, res.Records, rec.Choices); n > 0 {
		ok, err := e.tries(ctx, moved, "faults anchored on messages", "moved", n)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			all = moved
		}
	}
	for _, d := range all {
		if d.Kind == sched.InjectDecision {
			e.injects[d.Key] = d.After
		}
	}
	e.log.Info("decisions", "ops", len(res.Records), "decisions", len(all), "failure", ex.Failure)
	for _, d := range all {
		e.log.Debug("decision", "d", d.String())
	}
	return res, all, nil
}

// wholeRunMin is the fewest decisions of which a minimization that the
// budget stopped with more than a tenth of them left is called a course of
// the whole run: on a short trace a tenth is a few decisions.
const wholeRunMin = 100

// wholeRun says whether left of all decisions still needed is most of a
// long trace's order: more than a tenth of 100 or more.
func wholeRun(left, all int) bool { return all >= wholeRunMin && 10*left > all }

// leaveToCurve says whether the minimization, left decisions still
// needed of all, stops here for the probability curve: past curveAt, with
// most of a long trace's order needed. It marks toCurve.
func (e *explainer) leaveToCurve(left, all int) bool {
	if e.curveAt.IsZero() || time.Now().Before(e.curveAt) || !wholeRun(left, all) {
		return false
	}
	e.toCurve = true
	return true
}

// wholeRunSaid says that left of all decisions are still needed: most of
// the trace's order, which a run leaving it loses.
func (e *explainer) wholeRunSaid(left, all int) string {
	return fmt.Sprintf("%d of the %d decisions (%d%%) still needed after %d runs: the failure needs most of the trace's order, a course of the whole run that a run leaving it loses, rather than a few races",
		left, all, 100*left/all, e.runs)
}

// minimal minimizes the decisions and checks the result is 1-minimal
// (verify); it fills ex's verdicts.
func (e *explainer) minimal(ctx context.Context, ex *Explanation, all []sched.Decision, budget time.Duration) ([]sched.Decision, error) {
	min, oneMin, err := e.minimize(ctx, all)
	if err == nil && oneMin {
		min, ex.Checked, ex.Dropped, err = e.verify(ctx, min)
	}
	switch {
	case errors.Is(err, errBudget) && e.toCurve:
		ex.Notes = append(ex.Notes, fmt.Sprintf("the minimization stopped at two thirds of the budget (%v) with %s; the rest of the budget went to the probability curve, which says when the failure became likely, and %s are what explain can say of its cause",
			budget, e.wholeRunSaid(len(min), len(all)), causeSaid(ex)))
		oneMin = false
	case errors.Is(err, errBudget):
		ex.Notes = append(ex.Notes, fmt.Sprintf("the budget (%v) ran out while minimizing: %d decisions left, not known to be 1-minimal", budget, len(min)))
		if wholeRun(len(min), len(all)) {
			// raft's livelock and heartbeat race: 802 of 4,844, 1,769 of
			// 2,179 (examples/raft/README.md).
			ex.Notes = append(ex.Notes, e.wholeRunSaid(len(min), len(all))+"; "+causeSaid(ex)+" are what explain can say of it")
		}
		oneMin = false
	case err != nil:
		return nil, err
	}
	ex.OneMinimal = oneMin
	ex.Default = len(min) == 0 && oneMin
	if e.timed > 0 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the faults and delays alone, each right after the op the trace made it after, passed; with its %d faults (and their recoveries) at the times the trace made them they failed: the minimization went on from those, each due at its time", e.timed))
	}
	return min, nil
}

// causeSaid names what an explanation says of the cause of a failure that
// is a course of the whole run: the faults' verdicts, and the runs with
// the order left to chance where they were made.
func causeSaid(ex *Explanation) string {
	if ex.Chance != nil && ex.Chance.With.Runs > 0 {
		return "the faults' verdicts and their runs with the order left to chance"
	}
	return "the faults' verdicts"
}

// verify checks that set is 1-minimal, each decision by a run of set
// without it (that decision flipped: left to the default order): ddmin's
// verdicts were single runs, remembered by subset, and a system's noise
// may have made the one that ruled a decision necessary pass. A decision
// whose run without it still fails is dropped and the rest minimized
// again, until every decision's run without it loses the failure. It
// returns the set, the runs made and the decisions dropped; the runs are
// those name reads the pairs off (without).
func (e *explainer) verify(ctx context.Context, set []sched.Decision) ([]sched.Decision, int, int, error) {
	checked, dropped := 0, 0
	for i := 0; i < len(set); i++ {
		rest := append(append([]sched.Decision(nil), set[:i]...), set[i+1:]...)
		res, err := e.without(ctx, set, i)
		if err != nil {
			return set, checked, dropped, err
		}
		checked++
		got := failureOf(res)
		e.cache[subsetKey(rest)] = got
		if e.log.Enabled(ctx, slog.LevelDebug) {
			e.log.Debug("1-minimality check", "decision", set[i].String(), "without it", got.String(), "needed", !got.is(e.want), "faults", faultsOf(res))
		}
		if !got.is(e.want) {
			continue
		}
		dropped++
		oneMin := false
		if set, oneMin, err = e.minimize(ctx, rest); err != nil || !oneMin {
			return set, checked, dropped, cmp.Or(err, errBudget)
		}
		i = -1 // check the new set from its first decision
	}
	return set, checked, dropped, nil
}

// minimized runs the minimized decisions once more, keeping the trace,
// which it writes into out as minimized.jsonl and replays; it fills ex's
// figures of that run.
func (e *explainer) minimized(ctx context.Context, ex *Explanation, min []sched.Decision, out string) (*engine.TrialResult, [][]sched.Op, error) {
	// The choices offered at each decision say which ops raced (offers).
	forced := e.forced(min)
	rec := &sched.Recorder{Strategy: forced}
	if time.Now().After(e.deadline) {
		// One more run past the budget: its trace is the result.
		saved := e.deadline
		e.deadline = time.Now().Add(time.Hour)
		defer func() { e.deadline = saved }()
	}
	mres, err := e.runWith(ctx, rec, true)
	if err != nil {
		return nil, nil, err
	}
	if got := failureOf(mres); !got.is(e.want) {
		return nil, nil, fmt.Errorf("the minimized decisions ended %v, not %v: the system's schedule is not deterministic enough to explain", got, e.want)
	}
	if forced.Skipped > 0 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("%d injected decisions were skipped in the minimized run: their advance or fault was not there to take", forced.Skipped))
	}
	ex.MinimizedOps = len(mres.Records)
	ex.Records = mres.Records
	if mres.TracePath != "" {
		dst := filepath.Join(out, "minimized.jsonl")
		if err := copyFile(mres.TracePath, dst); err != nil {
			return nil, nil, err
		}
		ex.MinimizedTrace = dst
		if err := e.replayMinimized(ctx, ex); err != nil {
			return nil, nil, err
		}
	}
	return mres, rec.Choices, nil
}

// replayMinimized replays ex's minimized trace as `lockstep replay` would:
// a forced run's trace holds faults and delays the forced strategy placed
// itself, and only a replay says that the trace alone brings them back.
func (e *explainer) replayMinimized(ctx context.Context, ex *Explanation) error {
	rep, err := e.rr.Replay(ctx, ex.MinimizedTrace)
	if err != nil {
		return err
	}
	e.runs++
	switch got := failureOf(rep.Trial); {
	case !rep.Same:
		ex.MinimizedDiverged = rep.Diff
	case !got.is(e.want):
		ex.MinimizedDiverged = fmt.Sprintf("it ended %v, not %v", got, e.want)
	default:
		ex.MinimizedReplays = true
	}
	return nil
}

// probability measures ex's curve: the failure's probability after
// prefixes of recs, each continued runs times (0: DefaultContinuations,
// negative: none) with the trace's strategy, and marks its jump.
func (e *explainer) probability(ctx context.Context, ex *Explanation, strategy string, recs []sched.Record, runs int, syms *symbolizer) error {
	if runs == 0 {
		runs = DefaultContinuations
	}
	if runs < 0 {
		return nil
	}
	var err error
	ex.Curve, ex.Jump, err = e.curve(ctx, recs, continuing(strategy), runs)
	if j := ex.Jump; j != nil {
		for i := range recs {
			if recs[i].Step == j.Step {
				j.Op = event(&recs[i], syms)
			}
		}
		j.Race = jumpRace(ex.Races, j.Step)
	}
	if errors.Is(err, errBudget) {
		ex.Notes = append(ex.Notes, "the budget ran out while measuring the probability curve")
		return nil
	}
	return err
}

// minimize is ddmin (Zeller and Hildebrandt) over the decisions: it
// returns a subset that still fails and whether it is 1-minimal (no
// decision can be removed).
func (e *explainer) minimize(ctx context.Context, all []sched.Decision) ([]sched.Decision, bool, error) {
	if ok, err := e.fails(ctx, all); err != nil {
		return all, false, err
	} else if !ok {
		return nil, false, fmt.Errorf("forcing all %d decisions of the trace did not give its failure (%v): the trace's order is not reproduced by its decisions", len(all), e.want)
	}
	if ok, err := e.fails(ctx, nil); err != nil {
		return all, false, err
	} else if ok {
		return nil, true, nil
	}
	c := all
	// A long trace's decisions are mostly holds (a strategy's every
	// departure from the oldest op) while its failure often needs only
	// its faults and delays: try those alone first, which saves ddmin
	// most of its runs on a trace of thousands of ops.
	injects := injectsOf(all)
	if len(injects) > 0 && len(injects) < len(all) {
		ok, err := e.fails(ctx, injects)
		if err != nil {
			return all, false, err
		}
		if ok {
			c = injects
		} else if timed, n := atTheirTimes(injects); n > 0 {
			// Anchored after the trace's ops, the faults come late in
			// a run whose ops are not the trace's: at the times the
			// trace made them, they may still fail it.
			ok, err := e.tries(ctx, timed, "faults at their times", "faults", n)
			if err != nil {
				return all, false, err
			}
			if ok {
				c = timed
				e.timed = n
			}
		}
	}
	n := 2
	for len(c) >= 2 {
		parts := split(c, n)
		reduced := false
		for _, p := range parts {
			if e.leaveToCurve(len(c), len(all)) {
				return c, false, errBudget
			}
			ok, err := e.fails(ctx, p)
			if err != nil {
				return c, false, err
			}
			if ok {
				c, n, reduced = p, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range parts {
				if e.leaveToCurve(len(c), len(all)) {
					return c, false, errBudget
				}
				comp := complement(parts, i)
				ok, err := e.fails(ctx, comp)
				if err != nil {
					return c, false, err
				}
				if ok {
					c, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(c) {
				break
			}
			n = min(2*n, len(c))
		}
	}
	// ddmin stops at n = len(c) with no complement failing: no single
	// decision can go (with two, each half is the other's complement).
	return c, true, nil
}

// atTheirTimes is ds with each fault (and recovery) made due at the time
// the trace made it (sched.Decision.Timed), and how many faults are.
func atTheirTimes(ds []sched.Decision) ([]sched.Decision, int) {
	out := make([]sched.Decision, len(ds))
	n := 0
	for i, d := range ds {
		out[i] = d.AtItsTime()
		if out[i].Timed && !faults.ReplayOf(d.Op.Kind).Recovery {
			n++
		}
	}
	return out, n
}

func split(c []sched.Decision, n int) [][]sched.Decision {
	var out [][]sched.Decision
	for i := 0; i < n; i++ {
		lo, hi := i*len(c)/n, (i+1)*len(c)/n
		if hi > lo {
			out = append(out, c[lo:hi])
		}
	}
	return out
}

func complement(parts [][]sched.Decision, skip int) []sched.Decision {
	var out []sched.Decision
	for i, p := range parts {
		if i != skip {
			out = append(out, p...)
		}
	}
	return out
}

// copyFile copies src to dst through no link at dst's name (package
// safefs): explain's output directory may lie in a trial's directory.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	// The directory is explain's output directory, made before any run
	// (forTrace, engine.NewRerunner).
	d, err := safefs.OpenDir(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(filepath.Base(dst), b, 0o644)
}
