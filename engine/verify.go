package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
)

// verify replays a failing trial's trace on the job that ran it, right
// after it (run --verify), and records what the replay showed. A trace
// that does not give its failure again turns the trial into an
// Unreplayable outcome: a failure nobody can replay, explain or share is
// lockstep's problem to report, not a finding about the system. The
// replay's directory is removed when it agreed, kept when it diverged.
func (j *job) verify(ctx context.Context, r *TrialResult, p trialParams) error {
	tr, err := LoadTrace(r.TracePath)
	if err != nil {
		return fmt.Errorf("verifying trial %d: %w", r.Index, err)
	}
	tail := sched.NewReplayTail(replayTailMax)
	// As `lockstep replay` runs it (ReplayLogged), so that a verified
	// trace is one the command reproduces.
	vp := replayParams(tr, tail)
	vp.dir = trialDir(filepath.Join(j.outDir, "verify"), p.index)
	res, err := j.runTrial(ctx, vp)
	if ctx.Err() != nil {
		return nil // stopped: no verdict either way
	}
	if err != nil {
		return fmt.Errorf("verifying trial %d: %w", r.Index, err)
	}
	rr := compareReplay(tr, res, tail)
	v := &result.Verification{Same: rr.Same, Diff: rr.Diff, Failure: r.Outcome}
	r.Verify = v
	if rr.Same {
		return os.RemoveAll(res.Dir)
	}
	v.Dir = res.Dir
	o := r.Outcome
	r.Outcome = Outcome{Kind: Unreplayable, Node: o.Node, Steps: o.Steps, VTime: o.VTime,
		Detail: fmt.Sprintf("%s (%s), but its trace did not replay: %s (replay in %s)", o.Kind, o.Detail, rr.Diff, res.Dir)}
	return nil
}
