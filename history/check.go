package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is the result of a linearizability check.
type Verdict string

const (
	Linearizable Verdict = "ok"
	Violation    Verdict = "violation"
	// TimedOut: porcupine gave up within the timeout; no violation was
	// found, none is ruled out.
	TimedOut Verdict = "timed-out"
)

// Result is a check's verdict and what is needed to draw it.
type Result struct {
	Verdict Verdict
	// Checked counts the operations given to porcupine; Dropped those left
	// out because they constrain nothing (failed operations, reads of
	// unknown outcome); Unknown those of unknown outcome kept as never
	// returned.
	Checked, Dropped, Unknown int
	Elapsed                   time.Duration

	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// Visualize writes porcupine's HTML visualization of the history and its
// (partial) linearizations.
func (r *Result) Visualize(w io.Writer) error {
	return porcupine.Visualize(r.model, r.info, w)
}

// VisualizeFile writes the visualization to path.
func (r *Result) VisualizeFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.Visualize(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// Operations converts a history for porcupine. An operation of unknown
// outcome returns after every other event of the history (porcupine's
// "never returned"; a finite time keeps the visualization readable).
// Equal times are concurrent: porcupine reads [Call, Return] as a closed
// interval and orders calls before returns at the same time, so an
// operation that returned at t never precedes one called at t.
func (m *Model) Operations(ops []Op) (out []porcupine.Operation, dropped, unknown int, err error) {
	var last int64
	for i := range ops {
		last = max(last, ops[i].Call)
		if ops[i].Return != nil {
			last = max(last, *ops[i].Return)
		}
	}
	for i := range ops {
		op := &ops[i]
		if err := op.validate(); err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", op.Source, err)
		}
		in, o, keep, err := m.convert(op)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", op.Source, err)
		}
		if !keep {
			dropped++
			continue
		}
		ret := last + 1
		if op.Outcome() == OK {
			ret = *op.Return
		} else {
			unknown++
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Process,
			Input:    in,
			Output:   o,
			Call:     op.Call,
			Return:   ret,
			Metadata: op.Source,
		})
	}
	return out, dropped, unknown, nil
}

// Check decides whether ops are linearizable under the model, giving
// porcupine at most timeout (0: no limit; a deadline of ctx also bounds
// it). Operations' processes must be dense from 0 (Merge makes them so)
// for the visualization to draw one lane per process.
func Check(ctx context.Context, m *Model, ops []Op, timeout time.Duration) (*Result, error) {
	pops, dropped, unknown, err := m.Operations(ops)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		if timeout <= 0 || left < timeout {
			timeout = left
		}
	}
	res := &Result{Checked: len(pops), Dropped: dropped, Unknown: unknown, model: m.p}
	type verdict struct {
		r    porcupine.CheckResult
		info porcupine.LinearizationInfo
	}
	// porcupine takes no context: run it aside so that a cancelled ctx
	// returns at once, and make every step fail once ctx is done so that
	// the abandoned search ends soon (its verdict is thrown away).
	pm := m.p
	pm.StepContext = func(_ context.Context, s, in, out any) (bool, any) {
		if ctx.Err() != nil {
			return false, s
		}
		return m.p.Step(s, in, out)
	}
	done := make(chan verdict, 1)
	start := time.Now()
	go func() {
		r, info := porcupine.CheckOperationsVerbose(pm, pops, timeout)
		done <- verdict{r, info}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-done:
		res.Elapsed = time.Since(start)
		res.info = v.info
		switch v.r {
		case porcupine.Ok:
			res.Verdict = Linearizable
		case porcupine.Illegal:
			res.Verdict = Violation
		default:
			res.Verdict = TimedOut
		}
		return res, nil
	}
}
