package engine

import (
	"bufio"
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
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/vclock"
)

// writeTrace writes a trial's trace to f and closes it.
func writeTrace(f *os.File, sp *spec.Spec, res *TrialResult, p trialParams, clk *vclock.Clock) error {
	defer f.Close()
	w := sched.NewTraceWriter(f)
	absSpec, _ := filepath.Abs(sp.Path)
	if err := w.WriteHeader(sched.Header{
		Version: Version, Spec: absSpec, SpecDigest: sp.Digest, Trial: res.Index, Seed: res.Seed,
		Strategy: p.strategy.Name(), Scheme: p.scheme, Epoch: sp.Time.Epoch.UnixNano(),
		Delays: sp.Time.Delays, MaxDelay: int64(sp.Time.MaxDelay), Tick: int64(sp.Time.Tick),
		FaultSteps: p.expect.Faults, DelaySteps: p.expect.Delays, Symptom: p.symptom.TemplatesOrNil(), SymptomFailure: p.symptom.FailureOrEmpty(),
	}); err != nil {
		return err
	}
	for _, r := range res.Records {
		if err := w.WriteRecord(r); err != nil {
			return err
		}
	}
	if err := w.WriteOutcome(res.Outcome); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// LoadTrace reads a trace file.
func LoadTrace(path string) (*sched.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTrace(bufio.NewReader(f), path)
}

// ReadTrace reads a trace from r; errors start with name.
func ReadTrace(r io.Reader, name string) (*sched.Trace, error) {
	t, err := sched.ReadTrace(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i := range t.Records {
		// sched reads any well-formed fault kind name; which exist is
		// package faults' to say.
		if k := t.Records[i].Op.Kind; k.IsFault() && !faults.Known(k) {
			return nil, fmt.Errorf("%s: step %d: unknown fault kind %q (this lockstep knows %v)", name, t.Records[i].Step, k, faults.Kinds())
		}
	}
	return t, nil
}

// replayable refuses a trace that cannot replay whatever the run does: a
// kind-aimed hold whose shape an older lockstep wrote lossily would hold
// nothing, and the run would diverge at the first message it held.
func replayable(tr *sched.Trace) error {
	if tr.Outcome == nil {
		return ErrCutShort
	}
	if len(tr.Lossy) > 0 {
		return fmt.Errorf("step %d: the shape of the messages its hold aimed at lost its bytes that are not UTF-8 (the trace was written by a lockstep before 2026-12-03), so what it held cannot be known: the trace cannot replay", tr.Lossy[0])
	}
	return nil
}

// ErrCutShort is the error of a trace without its last line, the
// outcome: what a replay compares with, and what explain explains.
var ErrCutShort = errors.New("the trace has no outcome line: it was cut short (lockstep killed, or its disk full, while writing it), so what its trial ended in is not known")

// ReplayResult compares a replayed trial with its trace.
type ReplayResult struct {
	Trial *TrialResult
	// Same is true when the outcome kind and the op sequence match.
	Same bool
	// Diff says what differed, when Same is false.
	Diff string
	// Moved counts ops that ran on another thread of the same process than
	// in the trace (Go, JVM): the same schedule, other OS threads.
	Moved int
	// Resited counts ops the same thread made from another call site than
	// in the trace (sched.Resited): the same exchange down another path.
	Resited int
	// Short counts ops at the end of a passing trace that the replay did
	// not make: its clients were done, and the processes that made them
	// in the recorded run ended first here (a child killed by its parent
	// on the way out). At most replayShortMax.
	Short int
	// Resized counts ops that were the trace's in all but their byte
	// count on an Erlang distribution connection (sched.Resized): the same
	// message encoded at another length, as the VM's atom cache may make
	// it. Sizes names the first.
	Resized int
	Sizes   string
	// Tail counts ops released after the trace's last decision, before the
	// trace's outcome came: processes on their way out (a JVM's exit).
	Tail int
	// Clock says, when the op sequence matched, where the first op ran at
	// another virtual time than the trace's ("" when none did): the same
	// failure, with a timeout or a fault moved. Not counted against Same,
	// since a program that reads a clock lockstep cannot make virtual (the
	// TSC on a host that does not honour PR_TSC_SIGSEGV) can move its
	// deadlines without changing its ops.
	Clock string
}

// replayTailMax bounds the ops a replay releases past the trace's last
// decision while it waits for the trace's outcome.
const replayTailMax = 100

// replayShortMax bounds the ops at a passing trace's end that its replay,
// its clients done, may lack (ReplayResult.Short).
const replayShortMax = 10

// Replay re-runs the trial a trace describes, forcing its decisions.
func Replay(ctx context.Context, tracePath, outDir string) (*ReplayResult, error) {
	return ReplayLogged(ctx, tracePath, outDir, nil)
}

// ReplayLogged is Replay with the engine's and the tracer's log going to
// log (nil: none).
func ReplayLogged(ctx context.Context, tracePath, outDir string, log *slog.Logger) (*ReplayResult, error) {
	return ReplayWith(ctx, tracePath, outDir, ReplayOptions{Log: log})
}

// ReplayOptions are what a replay does beyond its trace's decisions.
type ReplayOptions struct {
	// Log is where the engine's and the tracer's log go (nil: nowhere).
	Log *slog.Logger
	// Lines keeps the nodes' lines in the order lockstep read them
	// (TrialResult.Lines): one log of the cluster, as a collector would
	// have interleaved it (replay --lines).
	Lines bool
}

// ReplayWith is Replay with options.
func ReplayWith(ctx context.Context, tracePath, outDir string, o ReplayOptions) (*ReplayResult, error) {
	log := o.Log
	tr, err := LoadTrace(tracePath)
	if err != nil {
		return nil, err
	}
	if err := replayable(tr); err != nil {
		return nil, fmt.Errorf("%s: %w", tracePath, err)
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
	if outDir == "" {
		outDir = filepath.Join(filepath.Dir(tracePath), "replay")
	}
	// The replay's trial directory is cleared first (see runTrial): it
	// must not hold the trace.
	if dir, err := filepath.Abs(trialDir(outDir, tr.Header.Trial)); err == nil {
		if abs, err := filepath.Abs(tracePath); err == nil && strings.HasPrefix(abs, dir+string(filepath.Separator)) {
			return nil, fmt.Errorf("replaying into %s would delete the trace %s: choose another output directory", outDir, tracePath)
		}
	}
	if err := OutBelowTrace(tracePath, outDir, "trials"); err != nil {
		return nil, err
	}
	// Two replays into one directory would clear each other's trial.
	lock, err := lockOut(outDir)
	if err != nil {
		return nil, err
	}
	defer lock.unlock()
	j, err := newJob(ctx, sp, pickCPUs(1)[0], 1, outDir, log, nil)
	if err != nil {
		return nil, err
	}
	defer j.close()
	tail := sched.NewReplayTail(replayTailMax)
	p := replayParams(tr, tail)
	p.lines = o.Lines
	if tr.Header.Epoch != 0 {
		sp.Time.Epoch = time.Unix(0, tr.Header.Epoch).UTC()
	}
	sp.Time.Delays, sp.Time.MaxDelay = tr.Header.Delays, time.Duration(tr.Header.MaxDelay)
	sp.Time.Tick = time.Duration(tr.Header.Tick)
	res, err := j.runTrial(ctx, p)
	if err != nil {
		return nil, err
	}
	return compareReplay(tr, res, tail), nil
}

// replayParams are the parameters of a trial that replays tr, its tail
// then released by tail: the trace's trial, seed, scheme and windows.
func replayParams(tr *sched.Trace, tail *sched.ReplayTail) trialParams {
	return trialParams{index: tr.Header.Trial, seed: tr.Header.Seed, strategy: sched.NewReplay(tr, tail, faults.ReplayOf), traceAll: true,
		scheme: tr.Header.Scheme, frames: 1, expect: headerWindows(tr.Header), symptom: coverage.SymptomOf(tr.Header.Symptom, tr.Header.SymptomFailure)}
}

// compareReplay says whether a replayed trial gave its trace's outcome
// and op sequence; tail is the replay's tail strategy.
func compareReplay(tr *sched.Trace, res *TrialResult, tail *sched.ReplayTail) *ReplayResult {
	rr := &ReplayResult{Trial: res, Same: true}
	// parted is the step where the replay parted (0: at the end).
	parted := 0
	defer func() {
		if !rr.Same {
			got := res.Records
			if len(res.TimedEnd) > 0 {
				got = append(got[:len(got):len(got)], sched.Record{Step: len(got) + 1, Timed: res.TimedEnd})
			}
			rr.Diff += realTimeBefore(tr.Records, got, parted)
		}
	}()
	var want OutcomeKind
	if tr.Outcome != nil {
		want = tr.Outcome.Kind
	}
	switch {
	case res.Outcome.Kind == Diverged:
		// The divergence names the op and what differed: callers that
		// print only Diff (tests) must not lose it.
		rr.Same, rr.Diff = false, fmt.Sprintf("outcome %s (%s), trace has %s", res.Outcome.Kind, res.Outcome.Detail, want)
		parted = len(res.Records) + 1
	case res.Outcome.Kind != want:
		rr.Same, rr.Diff = false, fmt.Sprintf("outcome %s, trace has %s", res.Outcome.Kind, want)
	default:
		// A runtime's back-offs (sched.Op.RuntimeBackoff: sleeps, polls) are the
		// machine's timing's: the replay may make one the trace has not.
		got, want := withoutBackoffs(res.Records), withoutBackoffs(tr.Records)
		tailOps := tail.Len()
		if tailOps <= len(res.Records) {
			// The tail's own back-offs went with the rest.
			tailOps = len(withoutBackoffs(res.Records[len(res.Records)-tailOps:]))
		}
		if short := len(want) - len(got); res.Outcome.Kind == Pass && tailOps == 0 && short > 0 && short <= replayShortMax {
			// The clients were done and the trace's last ops did not come
			// (the trial waited for them, Trial.owed): a process on its
			// way out was killed by its parent before it reached them.
			rr.Short, want = short, want[:len(got)]
		}
		if len(got) != len(want)+tailOps {
			rr.Same, rr.Diff = false, fmt.Sprintf("%d ops, trace has %d", len(res.Records), len(tr.Records))
			parted = min(len(res.Records), len(tr.Records)) + 1
			break
		}
		rr.Tail = tail.Len()
		for i := range want {
			a, b := got[i].Op, want[i].Op
			d := sched.Differs(&b, &a, true)
			if d != "" && sched.Resited(&b, &a) {
				d = ""
				rr.Resited++
			}
			if d == "" {
				d = sched.ValuesDiffer(&b, &a)
				if d != "" && sched.Resized(&b, &a, want[i].Data) {
					d = ""
					rr.Resized++
					if rr.Sizes == "" {
						rr.Sizes = fmt.Sprintf("step %d (%v), the trace has %d bytes", want[i].Step, &a, b.Bytes)
					}
				}
			}
			if d != "" {
				rr.Same, rr.Diff = false, fmt.Sprintf("step %d: %s (%v, trace has %v)", want[i].Step, d, &a, &b)
				parted = want[i].Step
				if rr.Sizes != "" {
					rr.Diff += fmt.Sprintf("; before it, another byte count at %s (%d in all)", rr.Sizes, rr.Resized)
				}
				break
			}
			if a.LPID != b.LPID {
				rr.Moved++
			}
			if at, was := got[i].VTime, want[i].VTime; at != was && rr.Clock == "" {
				rr.Clock = fmt.Sprintf("step %d (%v) ran at %v, the trace has it at %v", want[i].Step, &a, time.Duration(at), time.Duration(was))
			}
		}
	}
	return rr
}

// withoutBackoffs is recs without a runtime's back-offs.
func withoutBackoffs(recs []sched.Record) []sched.Record {
	out := make([]sched.Record, 0, len(recs))
	for _, r := range recs {
		if !r.Op.RuntimeBackoff() {
			out = append(out, r)
		}
	}
	return out
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// realTimeBefore says, for a replay that parted at step parted (0: at
// the end), where real time rather than a decision settled what ran
// (sched.Record.Timed) in the recorded run (trace) and in the replay
// (got) before it: the first point where the two differ, or that they
// met the same points. Then what ran at one of them (a loop on the clock
// beside a held clone) may still have gone another way, the nearer the
// parting the likelier; or the parting came from something lockstep does
// not count as real time's.
func realTimeBefore(trace, got []sched.Record, parted int) string {
	a, b := timedPoints(trace, parted), timedPoints(got, parted)
	for i := range max(len(a), len(b)) {
		if i < len(a) && i < len(b) && a[i] == b[i] {
			continue
		}
		return fmt.Sprintf("; before it, real time settled what ran differently: the run %s, the replay %s", pointAt(a, i), pointAt(b, i))
	}
	if len(a) == 0 {
		return "; before it, real time settled nothing in either run"
	}
	gap := ""
	if last := a[len(a)-1].step; parted > last {
		gap = fmt.Sprintf(", %d steps before", parted-last)
	}
	return fmt.Sprintf("; before it, real time settled what ran at the same points in both (%d), the last %s%s", len(a), pointAt(a, len(a)-1), gap)
}

// timedPoint is a record's real-time points, with its step.
type timedPoint struct {
	step  int
	notes string
}

// timedPoints lists the records with real-time points up to step upTo
// (all of them when upTo is 0).
func timedPoints(recs []sched.Record, upTo int) []timedPoint {
	var out []timedPoint
	for _, r := range recs {
		if upTo > 0 && r.Step > upTo {
			break
		}
		if len(r.Timed) > 0 {
			out = append(out, timedPoint{r.Step, strings.Join(r.Timed, "; ")})
		}
	}
	return out
}

// pointAt names point i of ps, or says there is none.
func pointAt(ps []timedPoint, i int) string {
	if i >= len(ps) {
		return "none"
	}
	return fmt.Sprintf("at step %d (%s)", ps[i].step, ps[i].notes)
}
