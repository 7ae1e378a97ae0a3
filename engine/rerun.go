package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// Rerunner runs a trace's trial again and again under strategies of the
// caller's choosing, on one network: what package explain needs to replay
// subsets of a failing trace's decisions. Each run has the trace's trial
// index, seed (so the nodes' random bytes and the engine's draws are the
// trace's) and timing settings.
type Rerunner struct {
	Trace *sched.Trace
	Spec  *spec.Spec
	j     *job
	out   string
}

// NewRerunner loads the trace's spec, checks that it did not change, and
// builds a network for the runs; their trial directories go under outDir.
// log (nil: warnings to stderr) gets the engine's and the tracer's log.
func NewRerunner(ctx context.Context, tr *sched.Trace, outDir string, log *slog.Logger) (*Rerunner, error) {
	if err := replayable(tr); err != nil {
		return nil, err
	}
	sp, err := spec.Load(tr.Header.Spec)
	if err == nil {
		// Before the digest, which covers the images.
		err = image.Resolve(ctx, sp)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the trace's spec: %w", err)
	}
	if sp.Digest != tr.Header.SpecDigest {
		return nil, fmt.Errorf("%s changed since the trace was written (digest %s, trace has %s)", tr.Header.Spec, short(sp.Digest), short(tr.Header.SpecDigest))
	}
	if tr.Header.Epoch != 0 {
		sp.Time.Epoch = time.Unix(0, tr.Header.Epoch).UTC()
	}
	sp.Time.Delays, sp.Time.MaxDelay = tr.Header.Delays, time.Duration(tr.Header.MaxDelay)
	sp.Time.Tick = time.Duration(tr.Header.Tick)
	out, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	j, err := newJob(ctx, sp, pickCPUs(1)[0], 1, out, log, nil)
	if err != nil {
		return nil, err
	}
	return &Rerunner{Trace: tr, Spec: sp, j: j, out: out}, nil
}

// Run runs the trial once under strat; its trace is written when the run
// fails or keepTrace is set (TrialResult.TracePath).
func (r *Rerunner) Run(ctx context.Context, strat sched.Strategy, keepTrace bool) (*TrialResult, error) {
	h := r.Trace.Header
	p := trialParams{index: h.Trial, seed: h.Seed, strategy: strat, traceAll: keepTrace, scheme: h.Scheme, frames: 1, expect: headerWindows(h)}
	return r.j.runTrial(ctx, p)
}

// Close tears the network down.
func (r *Rerunner) Close() error { return r.j.close() }

// Replay runs the trace at path as `lockstep replay` runs it (Replay),
// on the rerunner's network: explain checks its minimized trace this way
// before it says that trace replays. The trace must be one of this
// rerunner's spec.
func (r *Rerunner) Replay(ctx context.Context, path string) (*ReplayResult, error) {
	tr, err := LoadTrace(path)
	if err != nil {
		return nil, err
	}
	if tr.Header.SpecDigest != r.Trace.Header.SpecDigest {
		return nil, fmt.Errorf("%s is a trace of another spec than %s", path, r.Trace.Header.Spec)
	}
	tail := sched.NewReplayTail(replayTailMax)
	res, err := r.j.runTrial(ctx, replayParams(tr, tail))
	if err != nil {
		return nil, err
	}
	return compareReplay(tr, res, tail), nil
}
