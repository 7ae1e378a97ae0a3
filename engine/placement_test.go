package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// placementTrials is the number of trials TestPlacementSpread runs:
// LOCKSTEP_PLACEMENT_TRIALS=1000 gives the figures of docs/spec.md.
func placementTrials(t *testing.T) int {
	if v := os.Getenv("LOCKSTEP_PLACEMENT_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LOCKSTEP_PLACEMENT_TRIALS=%q", v)
		}
		return n
	}
	return 60
}

// tenths counts the times into the tenths of [from, until); out counts the
// times outside.
func tenths(times []time.Duration, from, until time.Duration) (h [10]int, out int) {
	for _, at := range times {
		if at < from || at >= until {
			out++
			continue
		}
		h[int((at-from)*10/(until-from))]++
	}
	return h, out
}

// Faults and delays fall all over their windows, whatever the strategy: no
// tenth of a window holds more than a fifth of them (testdata/specs/faults/
// placement.yaml; before triggers, every one fell in the first tenth).
func TestPlacementSpread(t *testing.T) {
	requireTrials(t)
	trials := placementTrials(t)
	for _, strategy := range []string{"pos", "random", "pct"} {
		t.Run(strategy, func(t *testing.T) {
			if strategy != "pos" && trials > 100 {
				t.Skip("the 1,000-trial figures are POS's")
			}
			sp, err := spec.Load(repoPath("testdata", "specs", "faults", "placement.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(t.Context(), sp, RunOptions{Trials: trials, OutDir: t.TempDir(), TraceAll: true, Jobs: 2, Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Errors != 0 || sum.Failures != 0 {
				t.Fatalf("outcomes %v", sum.ByKind)
			}
			var faultsAt, delaysAt []time.Duration
			for _, r := range sum.Results {
				for _, rec := range traceRecords(t, r) {
					switch k := rec.Op.Kind; {
					case rec.Auto:
					case k == sched.Advance:
						delaysAt = append(delaysAt, time.Duration(rec.VTime))
					case k.IsFault() && k != faults.Restart && k != faults.Heal:
						faultsAt = append(faultsAt, time.Duration(rec.VTime))
					}
				}
			}
			var table strings.Builder
			fmt.Fprintf(&table, "%s, %d trials: share of the injections in each tenth of the window\n| tenth |", strategy, trials)
			for i := range 10 {
				fmt.Fprintf(&table, " %d |", i+1)
			}
			table.WriteString(" outside | n |\n")
			for _, w := range []struct {
				name        string
				times       []time.Duration
				from, until time.Duration
			}{
				{"faults", faultsAt, sp.Faults.From, sp.Faults.Until},
				{"delays", delaysAt, sp.Time.From, sp.Time.Until},
			} {
				h, out := tenths(w.times, w.from, w.until)
				fmt.Fprintf(&table, "| %s [%v, %v) |", w.name, w.from, w.until)
				for _, n := range h {
					fmt.Fprintf(&table, " %.3f |", float64(n)/float64(len(w.times)))
				}
				fmt.Fprintf(&table, " %d | %d |\n", out, len(w.times))
				if len(w.times) < trials {
					t.Errorf("%s: %d in %d trials, want at least one a trial", w.name, len(w.times), trials)
				}
				for i, n := range h {
					if 5*n > len(w.times) {
						t.Errorf("%s: tenth %d holds %d of %d", w.name, i+1, n, len(w.times))
					}
				}
				// A delay is taken at or after its trigger, so a few land
				// past the window's end; a fault before the quiet period.
				if w.name == "faults" && out > 0 {
					t.Errorf("faults: %d outside the window", out)
				}
			}
			t.Log("\n" + table.String())
		})
	}
}

// A start-up race behind two sleeps of threads that never used the
// network (testdata/specs/timing/startup-sleep.yaml) is found by a delay
// of the service past the client's wake, and its trace replays.
func TestStartupSleepDelay(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "timing", "startup-sleep.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 40, OutDir: out, StopOnFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.First == nil || sum.First.Outcome.Kind != ClientFailed {
		t.Fatalf("no client failure in %d trials: %v", sum.Trials, sum.ByKind)
	}
	advanced := false
	for _, rec := range traceRecords(t, sum.First) {
		if rec.Op.Kind == sched.Advance && rec.Op.LPID == "client/0/t0" {
			advanced = true
		}
	}
	if !advanced {
		t.Fatalf("trial %d failed without a delay to the client's wake", sum.First.Index)
	}
	rr, err := Replay(t.Context(), sum.First.TracePath, out+"/replay")
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replay differs: %s", rr.Diff)
	}
}

// A burst of ops at one virtual instant (testdata/bugs/gproc-3: the
// client's session at 50 ms) is reached by step triggers, drawn over the
// window's steps in trial 0: the bug is found with the default spread, the
// schedule of each seed is the same whatever --jobs and --shard (trial 0's
// windows, not the trials run before, give the expected steps), and a
// failing trace replays from its header alone.
func TestStepTriggers(t *testing.T) {
	requireTrials(t)
	if _, err := os.Stat(repoPath("testdata", "bin", "bugs", "gproc-3", "gproc3")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(repoPath("testdata", "bugs", "gproc-3", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Faults.Spread {
		t.Fatal("gproc-3's faults are not spread")
	}
	const trials = 16
	// schedule is each trial's outcome and the steps and times of its
	// faults, by trial index.
	schedule := func(opts RunOptions) map[int]string {
		opts.Trials, opts.Strategy, opts.OutDir, opts.TraceAll = trials, "pos", t.TempDir(), true
		sum, err := Run(t.Context(), sp, opts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]string{}
		for _, r := range sum.Results {
			s := fmt.Sprintf("%s/%d", r.Outcome.Kind, r.Outcome.Steps)
			for _, rec := range traceRecords(t, r) {
				if rec.Op.Kind.IsFault() {
					s += fmt.Sprintf(" %v@%d,%v,%s", rec.Op.Kind, rec.Step, time.Duration(rec.VTime), rec.Trigger)
				}
			}
			out[r.Index] = s
		}
		return out
	}
	one := schedule(RunOptions{Jobs: 1})
	// Half the triggers are steps: about half the trials crash the leader
	// inside the session (with time triggers alone, 1 in 11 did).
	failed, byStep := 0, 0
	for _, s := range one {
		if strings.HasPrefix(s, string(Deadlock)) {
			failed++
			if strings.Contains(s, ",step") {
				byStep++
			}
		}
	}
	if byStep == 0 {
		t.Errorf("no failing trial's crash came at a step trigger: %v", one)
	}
	if failed < trials/4 {
		t.Errorf("%d of %d trials failed, want at least %d: %v", failed, trials, trials/4, one)
	}
	for name, opts := range map[string]RunOptions{
		"jobs 2":    {Jobs: 2},
		"shard 1/2": {Shard: Shard{Index: 1, Count: 2}},
	} {
		got := schedule(opts)
		for i, s := range got {
			if s != one[i] {
				t.Errorf("%s: trial %d: %s, with one job %s", name, i, s, one[i])
			}
		}
	}

	// With the default spread (time and steps), found in a few trials;
	// the trace says what its step triggers were drawn over.
	out := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 40, Strategy: "pos", OutDir: out, StopOnFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.First == nil {
		t.Fatalf("no failure in %d trials: %v", sum.Trials, sum.ByKind)
	}
	tr, err := LoadTrace(sum.First.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	if sum.First.Index > 0 && tr.Header.FaultSteps == 0 {
		t.Fatalf("trial %d's trace has no expected fault window steps", sum.First.Index)
	}
	rr, err := Replay(t.Context(), sum.First.TracePath, filepath.Join(out, "replay"))
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replay of trial %d differs: %s", sum.First.Index, rr.Diff)
	}
	t.Logf("%d of %d trials failed (%d at a step trigger); first failure at trial %d (fault window of %d steps expected): %v", failed, trials, byStep, sum.First.Index, tr.Header.FaultSteps, sum.First.Outcome)
}
