package explain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// Chance is what the trace's faults and delays do alone when the order of
// its ops is left to chance: where they do not give the failure in the
// default order (the failure needs the trace's order too), they are
// forced, each fault with its node, length and cut, and every other
// choice (which op runs next) is the campaign's strategy's, with a seed
// of its own per run.
// Each placement is tried: every fault right after the op the trace made
// it after (where the clock barely moves, as in a small C system, that
// is its place) and at the time the trace made it (where the ops come in
// another order, as in a Go cluster, the op it came after may come much
// earlier or later). A failure that comes in many of those runs is caused
// by its faults, its order one of many that fail; one that comes in none
// needs the trace's order, or more runs to tell.
type Chance struct {
	// Strategy chose the order; Faults counts the faults forced (their
	// recoveries not counted), Delays the delays.
	Strategy string `json:"strategy"`
	Faults   int    `json:"faults"`
	Delays   int    `json:"delays,omitempty"`
	// With is the runs with every fault (its Step is 0), placed at their
	// times when Timed, else after their ops; Other the other placement's
	// runs (none when no fault has a time).
	With  Point  `json:"with"`
	Timed bool   `json:"timed,omitempty"`
	Other *Point `json:"other,omitempty"`
	// Without are the runs with one fault left out, one entry a fault in
	// the trace's order (only when some runs With failed).
	Without []FaultChance `json:"without,omitempty"`
	// None is the runs with no fault (the delays kept), made where there
	// are several faults and none was needed alone.
	None *Point `json:"none,omitempty"`
	// Bare is the runs with nothing forced, the order alone, made where
	// runs with no fault (None) failed and the trace has delays.
	Bare *Point `json:"bare,omitempty"`
	// Trace is the first run With that failed, and NoneTrace the first of
	// None's: each a trace that replays, to read what that order did.
	Trace     string `json:"trace,omitempty"`
	NoneTrace string `json:"none_trace,omitempty"`
}

// FaultChance is the runs without one fault: Step is the fault's.
type FaultChance struct {
	Fault string `json:"fault"`
	Point
	// Needed says the failure is clearly rarer without it (by more than
	// the runs' noise, as the curve's jump is told from noise).
	Needed bool `json:"needed"`
}

// Summary says what the runs with every fault gave.
func (c *Chance) Summary() string {
	what := fmt.Sprintf("The %d faults", c.Faults)
	if c.Faults == 1 {
		what = "The fault"
	}
	if c.Delays > 0 {
		what += fmt.Sprintf(" and %d %s", c.Delays, plural(c.Delays, "delay", "delays"))
	}
	placed, other := "each right after the op the trace made it after", "each fault at the time the trace made it"
	if c.Timed {
		placed, other = other, placed
	}
	s := fmt.Sprintf("%s alone, %s, the order of the ops %s's (a seed a run): ", what, placed, c.Strategy)
	if c.With.Failed == 0 {
		s += fmt.Sprintf("none of %d runs failed the same way", c.With.Runs)
	} else {
		s += fmt.Sprintf("%d of %d runs failed the same way", c.With.Failed, c.With.Runs)
	}
	if c.Other != nil {
		s += fmt.Sprintf(" (%s: %d of %d)", other, c.Other.Failed, c.Other.Runs)
	}
	if c.With.Failed == 0 {
		s += fmt.Sprintf(": the failure needs the trace's order too, or is rarer than %d runs tell", c.With.Runs)
	}
	return s
}

// NoneSaid says what the runs with no fault gave.
func (c *Chance) NoneSaid() string {
	return fmt.Sprintf("without any fault: %d/%d, %s", c.None.Failed, c.None.Runs,
		partSaid(*c.None, c.With, "the faults take part", "the order does most of it"))
}

// BareSaid says what the runs with nothing forced gave.
func (c *Chance) BareSaid() string {
	return fmt.Sprintf("with nothing forced, the order alone: %d/%d, %s", c.Bare.Failed, c.Bare.Runs,
		partSaid(*c.Bare, *c.None, "the delays take part", "the order alone does it"))
}

// partSaid is the verdict on what was left out between with and without:
// it takes part where the failures fell by more than the runs' noise, and
// the rest does it where they fell by less than half; in between, the
// runs are too few to tell.
func partSaid(without, with Point, takes, rest string) string {
	what, _, _ := strings.Cut(takes, " take part")
	switch {
	case clearRise(without, with):
		return takes
	case 2*without.P() >= with.P():
		return "not shown that " + takes + ": " + rest
	}
	return "too few failures to tell whether " + what + " take part"
}

func (f FaultChance) String() string {
	verdict := "not shown needed"
	if f.Needed {
		verdict = "needed"
	}
	return fmt.Sprintf("step %d %s: without it %d/%d, %s", f.Step, f.Fault, f.Failed, f.Runs, verdict)
}

// chance measures ex.Chance when the faults and delays alone, anchored
// and at their times, do not give the failure in the default order: runs
// runs with every fault, in each placement, then, where some failed,
// runs without each fault in turn while the time before until lasts.
func (e *explainer) chance(ctx context.Context, ex *Explanation, all []sched.Decision, strategy string, runs int, until time.Time) error {
	if runs == 0 {
		runs = DefaultContinuations
	}
	if runs < 0 {
		return nil
	}
	fs, c, err := e.chanceSet(ctx, all)
	if c == nil || err != nil {
		return err
	}
	c.Strategy = continuing(strategy)
	ex.Chance = c
	if fs, err = e.chanceWith(ctx, c, fs, runs); err != nil || c.With.Failed == 0 {
		return e.chanceCut(ex, err)
	}
	if err := e.chanceEach(ctx, ex, c, fs, runs, until); err != nil {
		return e.chanceCut(ex, err)
	}
	if c.Faults < 2 || slices.ContainsFunc(c.Without, func(f FaultChance) bool { return f.Needed }) || time.Now().After(until) {
		return nil
	}
	// No fault is needed alone: are any? The delays alone say whether
	// the faults take part at all, or the order does it all.
	var delaysOnly []sched.Decision
	for _, d := range fs {
		if d.Op.Kind == sched.Advance {
			delaysOnly = append(delaysOnly, d)
		}
	}
	c.None = &Point{}
	if c.NoneTrace, err = e.chanceRuns(ctx, delaysOnly, c.Strategy, c.None, runs, "chance-none.jsonl"); err != nil || c.None.Failed == 0 || len(delaysOnly) == 0 {
		return e.chanceCut(ex, err)
	}
	// Without faults it still fails: the order alone, or with the
	// trace's delays?
	c.Bare = &Point{}
	_, err = e.chanceRuns(ctx, nil, c.Strategy, c.Bare, runs, "")
	return e.chanceCut(ex, err)
}

// chanceSet is the injected decisions of all and the Chance they make, nil
// when there is no fault among them or they give the failure alone in the
// default order, anchored or at their times.
func (e *explainer) chanceSet(ctx context.Context, all []sched.Decision) ([]sched.Decision, *Chance, error) {
	fs := injectsOf(all)
	if len(fs) == len(all) {
		return nil, nil, nil // the minimization starts from them: they fail alone
	}
	c := &Chance{}
	for _, d := range fs {
		switch {
		case d.Op.Kind == sched.Advance:
			c.Delays++
		case !faults.ReplayOf(d.Op.Kind).Recovery:
			c.Faults++
		}
	}
	if c.Faults == 0 {
		return nil, nil, nil
	}
	timed, _ := atTheirTimes(fs)
	for _, ds := range [][]sched.Decision{fs, timed} {
		if ok, err := e.fails(ctx, ds); err != nil || ok {
			return nil, nil, err
		}
	}
	return fs, c, nil
}

// chanceWith measures c.With in both placements, keeping the one that
// failed more (c.Other the other), and returns fs so placed; a rare
// failure gets a second round, so that a fault's verdict has a surer rate
// to fall from.
func (e *explainer) chanceWith(ctx context.Context, c *Chance, fs []sched.Decision, runs int) ([]sched.Decision, error) {
	var err error
	if c.Trace, err = e.chanceRuns(ctx, fs, c.Strategy, &c.With, runs, "chance.jsonl"); err != nil {
		return fs, err
	}
	if tfs, k := atTheirTimes(fs); k > 0 {
		c.Other = &Point{}
		t, err := e.chanceRuns(ctx, tfs, c.Strategy, c.Other, runs, "chance-timed.jsonl")
		if err != nil {
			return fs, err
		}
		if c.Other.Failed > c.With.Failed {
			c.With, *c.Other, c.Timed, fs, c.Trace = *c.Other, c.With, true, tfs, t
		}
	}
	if c.With.Failed > 0 && 2*c.With.Failed < c.With.Runs {
		_, err = e.chanceRuns(ctx, fs, c.Strategy, &c.With, runs, "")
	}
	return fs, err
}

// chanceEach leaves each fault of fs out in turn, in rounds of runs while
// the fall is neither clear nor small, up to three (ten runs tell 3/10
// from 0/10 no better than chance), until the time before until is spent.
func (e *explainer) chanceEach(ctx context.Context, ex *Explanation, c *Chance, fs []sched.Decision, runs int, until time.Time) error {
	for _, d := range fs {
		if d.Op.Kind == sched.Advance || faults.ReplayOf(d.Op.Kind).Recovery {
			continue
		}
		if time.Now().After(until) {
			ex.Notes = append(ex.Notes, fmt.Sprintf("with the order left to chance, %d of the %d faults were left out before a third of the budget was spent", len(c.Without), c.Faults))
			return nil
		}
		f := FaultChance{Fault: e.faultText(d)}
		rest := dropDecision(fs, d)
		for round := 0; round < 3 && (round == 0 || !time.Now().After(until)); round++ {
			if _, err := e.chanceRuns(ctx, rest, c.Strategy, &f.Point, runs, ""); err != nil {
				return err
			}
			if f.Needed = clearRise(f.Point, c.With); f.Needed || 2*f.P() >= c.With.P() {
				break
			}
		}
		f.Step = d.Step
		c.Without = append(c.Without, f)
	}
	return nil
}

// chanceCut notes a chance measure the budget cut short; other errors
// end the explanation.
func (e *explainer) chanceCut(ex *Explanation, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errBudget) {
		ex.Notes = append(ex.Notes, "the budget ran out while leaving the order to chance")
		return nil
	}
	return err
}

// chanceRuns forces fs (re-anchored where they follow a delay left out)
// in runs more runs, the rest chosen by strategy with the seeds after
// those pt counts (sched.Forced.Then), and adds them to pt: how many
// failed the same way. Where save names a file, the first run that
// failed is kept there, in the output directory, and its path returned.
func (e *explainer) chanceRuns(ctx context.Context, fs []sched.Decision, strategy string, pt *Point, runs int, save string) (string, error) {
	kept := ""
	for end := pt.Runs + runs; pt.Runs < end; {
		then, err := sched.New(strategy, sched.Params{})
		if err != nil {
			return kept, err
		}
		f := sched.NewForced(e.anchor(fs), faults.ReplayOf)
		f.Then, f.Seed = then, int64(pt.Runs+1)
		keep := save != "" && kept == "" && e.out != ""
		res, err := e.runWith(ctx, f, keep)
		if err != nil {
			return kept, err
		}
		pt.Runs++
		got := failureOf(res)
		if got.is(e.want) {
			pt.Failed++
			if keep && res.TracePath != "" {
				kept = filepath.Join(e.out, save)
				if err := copyFile(res.TracePath, kept); err != nil {
					return "", err
				}
			}
		}
		if e.log.Enabled(ctx, slog.LevelDebug) {
			e.log.Debug("chance run", "decisions", len(fs), "seed", f.Seed, "outcome", got.String(), "same", got.is(e.want), "faults", faultsOf(res))
		}
	}
	return kept, nil
}

// injectsOf are the injected decisions of all: its faults and delays.
func injectsOf(all []sched.Decision) []sched.Decision {
	var out []sched.Decision
	for _, d := range all {
		if d.Kind == sched.InjectDecision {
			out = append(out, d)
		}
	}
	return out
}

// continuing is the strategy that continues a trace's runs: its own,
// without conflict analysis (a "+" variant learns across a campaign's
// trials, which explain's runs are not), or POS where a replayed,
// minimized or explored trace's strategy makes no runs of its own.
func continuing(strategy string) string {
	if _, err := sched.New(strategy, sched.Params{}); err != nil {
		return "pos"
	}
	return strings.TrimSuffix(strategy, "+")
}
