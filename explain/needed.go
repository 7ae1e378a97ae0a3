package explain

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// FaultVerdict is what taking one of the trace's faults out said: with
// every other decision kept, does the run still fail?
type FaultVerdict struct {
	// Fault names it as the trace recorded it; Step is where.
	Fault string `json:"fault"`
	Step  int    `json:"step"`
	// Needed says the run without it did not give the failure; Without
	// is what it gave instead.
	Needed  bool   `json:"needed"`
	Without string `json:"without,omitempty"`
}

// neededFaults takes each of the trace's faults out, one at a time in the
// trace's order, with every other decision forced, and keeps out those
// the failure did not need: one run a fault, whose verdicts stand even
// where the minimization that follows runs out of budget. On a trace
// whose failure is a rare course of the whole run (a raft livelock kept
// 802 of its 4,844 decisions after 30 minutes of ddmin) they are what
// explain can still say: which faults it took. It returns all without
// the faults found not needed.
func (e *explainer) neededFaults(ctx context.Context, ex *Explanation, all []sched.Decision) ([]sched.Decision, error) {
	if ok, err := e.fails(ctx, all); err != nil || !ok {
		return all, err // minimize says why
	}
	set := all
	for _, d := range all {
		if d.Kind != sched.InjectDecision || !d.Op.Kind.IsFault() || faults.ReplayOf(d.Op.Kind).Recovery {
			continue
		}
		rest := dropDecision(set, d)
		got, err := e.outcome(ctx, rest)
		if errors.Is(err, errBudget) {
			ex.Notes = append(ex.Notes, "the budget ran out while taking the faults out one at a time")
			return set, nil
		} else if err != nil {
			return all, err
		}
		v := FaultVerdict{Fault: e.faultText(d), Step: d.Step, Needed: !got.is(e.want)}
		if v.Needed {
			v.Without = got.String()
		} else {
			set = rest
		}
		ex.Faults = append(ex.Faults, v)
	}
	return set, nil
}

// dropDecision is set without d.
func dropDecision(set []sched.Decision, d sched.Decision) []sched.Decision {
	out := make([]sched.Decision, 0, len(set))
	for _, x := range set {
		if x.Kind != d.Kind || x.Key != d.Key || x.Step != d.Step {
			out = append(out, x)
		}
	}
	return out
}

// faultText names an injected fault by the trace's record of it.
func (e *explainer) faultText(d sched.Decision) string {
	for _, r := range e.track {
		if r.Step == d.Step && r.Op.Kind == d.Op.Kind {
			if desc := sched.Describe(r); desc != "" {
				return fmt.Sprintf("the %s of %s (%s)", r.Op.Kind, r.Op.Node, desc)
			}
			break
		}
	}
	return fmt.Sprintf("the %s of %s", d.Op.Kind, d.Op.Node)
}
