package explain

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/disk"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestWindowCutByBudget: a fault's window is searched by moving it, a run
// per place; when the budget runs out during the search, the fault is
// still named (a kept decision is never left out of the explanation),
// with the bounds found before, a note of the side not searched, and no
// sentence that says it may come anywhere. Here the fault fails when it
// comes after op 3 and up to op 7 of twelve (a power cut: unless it keeps
// every change); the fake runner refuses every run past the first `runs`.
func TestWindowCutByBudget(t *testing.T) {
	const n, from, to = 12, 3, 7
	without := make([]sched.Record, n)
	for j := range without {
		without[j] = sched.Record{Step: j + 1, Op: sched.Op{Kind: sched.Sleep, Node: "a", LPID: "a/0/t0", Syscall: "nanosleep"}}
	}
	wkeys := sched.Keys(without, nil)
	// The failing run: the fault right after op 5.
	const at = 6
	recs := append(append(append([]sched.Record(nil), without[:at]...),
		sched.Record{Op: sched.Op{Kind: faults.Partition, Node: "a", LPID: "fault", Object: "node:a"}}), without[at:]...)
	for j := range recs {
		recs[j].Step = j + 1
	}
	keys := sched.Keys(recs, nil)
	d := sched.Decision{Kind: sched.InjectDecision, Key: keys[at], After: &keys[at-1], Op: recs[at].Op}
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}, Records: recs}
	passes := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Pass}, Records: without}
	power := d
	power.Op.Kind, power.Op.Disk = faults.Power, disk.PersistNone
	for _, tc := range []struct {
		fault        sched.Decision
		runs         int // runs the budget allows
		after, until int // the bounds named (-1: none)
		partial      string
	}{
		{fault: d, runs: 100, after: from, until: to + 1},
		{fault: d, runs: 0, after: -1, until: -1, partial: "how early and how late"},
		{fault: d, runs: 3, after: -1, until: -1, partial: "how early and how late"},
		{fault: d, runs: 7, after: -1, until: to + 1, partial: "how early"},
		// A power cut's draw is checked before its window: with the
		// budget for one run, the explanation still says the loss
		// decides (the same cut keeping every change passes).
		{fault: power, runs: 1, after: -1, until: -1, partial: "how early and how late"},
		{fault: power, runs: 100, after: from, until: to + 1},
	} {
		e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{}, want: failure{kind: sched.Deadlock}}
		e.fake = func(ds []sched.Decision) *engine.TrialResult {
			if e.runs >= tc.runs {
				e.deadline = time.Now().Add(-time.Second) // this run is the last
			}
			if len(ds) == 0 || ds[0].Op.Disk == disk.PersistAll {
				return passes
			}
			p := -1 // the fault's place: after op p of the run without it
			for j, k := range wkeys {
				if ds[0].After != nil && *ds[0].After == k {
					p = j
				}
			}
			if p >= from && p <= to {
				return fails
			}
			return passes
		}
		recs[at].Op = tc.fault.Op
		fault := tc.fault
		fault.Key = sched.Keys(recs, nil)[at]
		races, err := e.name(context.Background(), []sched.Decision{fault}, newFailingRun(recs, nil), nil, nil)
		if tc.partial == "" && err != nil || tc.partial != "" && !errors.Is(err, errBudget) {
			t.Errorf("%d runs: %v", tc.runs, err)
		}
		if len(races) != 1 {
			t.Fatalf("%d runs: %d races named; want the fault", tc.runs, len(races))
		}
		r := races[0]
		if r.Partial != (tc.partial != "") || !strings.Contains(r.Note, tc.partial) {
			t.Errorf("%d runs: partial %v, note %q; want %q", tc.runs, r.Partial, r.Note, tc.partial)
		}
		if strings.Contains(r.Summary, "anywhere") || !strings.Contains(r.Summary, tc.fault.Op.Kind.String()+" of a") {
			t.Errorf("%d runs: %q", tc.runs, r.Summary)
		}
		if tc.fault.Op.Kind == faults.Power && (r.Storage == nil || !r.Storage.DrawDecides || !strings.Contains(r.Summary, "persist all passes")) {
			t.Errorf("%d runs: storage %+v, %q; want the loss deciding", tc.runs, r.Storage, r.Summary)
		}
		after := -1
		if r.First.Op != "" {
			after = r.First.Step - 1
		}
		until := -1
		if r.Before != nil {
			until = r.Steps[0]
			for j := range recs {
				if recs[j].Step == r.Before.Step {
					until = j
				}
			}
			// The bound is described from the run without the fault
			// when the failing run does not have it: by its place there.
			if r.Before.Step > at {
				until = r.Before.Step - 2
			} else {
				until = r.Before.Step - 1
			}
		}
		if after != tc.after || until != tc.until {
			t.Errorf("%d runs: window after op %d until op %d (%s); want %d, %d", tc.runs, after, until, r.Summary, tc.after, tc.until)
		}
	}
}
