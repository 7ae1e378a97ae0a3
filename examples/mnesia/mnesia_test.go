package mnesia_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) { extest.Main(m) }

// requireMnesia skips unless Debian's Erlang and Mnesia are installed and
// this process may run lockstep's trials.
func requireMnesia(tb testing.TB) {
	tb.Helper()
	extest.RequireInstalled(tb, "Mnesia", "apt-get install erlang-base erlang-mnesia", "/usr/bin/erl")
	if m, _ := filepath.Glob("/usr/lib/erlang/lib/mnesia-*"); len(m) == 0 {
		tb.Skip("Mnesia is not installed (apt-get install erlang-mnesia)")
	}
	testutil.RequireTrials(tb)
}

// Without faults the client's 100 writes are all acknowledged and both
// copies agree: any other outcome is lockstep's (a stalled VM, a lost
// delivery, a timer that never fires).
func TestMnesiaNoFaults(t *testing.T) {
	requireMnesia(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	sp.Faults.Kinds = nil
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 1})
	for _, r := range sum.Results {
		out, _ := os.ReadFile(filepath.Join(r.Dir, "c.out"))
		if r.Outcome.Kind != engine.Pass {
			t.Fatalf("trial %d: %v\nclient output:\n%s", r.Index, r.Outcome, out)
		}
		if !strings.Contains(string(out), "acknowledged 100 of 100") || !strings.Contains(string(out), "ok 100") {
			t.Errorf("trial %d passed but its client did not acknowledge and check 100 writes:\n%s", r.Index, out)
		}
	}
}

// Trial 10 of seed 1 (README.md, "Measured"): b is cut off at 6.2 s for
// 75 s, longer than Erlang's failure detector; a and b each go on alone,
// and when they meet again a prints Mnesia's report of an inconsistent
// database, which the spec's never property makes a failure. Its trace
// must replay.
func TestMnesiaPartition(t *testing.T) {
	requireMnesia(t)
	r := reportingTrial(t, "spec.yaml", 10)
	if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
		t.Errorf("trial 10's trace did not replay: %s", diff)
	}
}

// Trial 12 of seed 1 under spec-outlast.yaml (README.md, "A shortest
// outage"): its one fault is a pause of b at 5 s, which faults.min_pause
// makes last at least 75 s, past Erlang's failure detector, so a takes b
// for down, and when b runs again Mnesia reports an inconsistent
// database. Under spec.yaml the same pause could last 9 s. Its trace must
// replay.
func TestMnesiaShortestPause(t *testing.T) {
	requireMnesia(t)
	r := reportingTrial(t, "spec-outlast.yaml", 12)
	tr, err := engine.LoadTrace(r.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	pauses := 0
	for _, rec := range tr.Records {
		if rec.Op.Kind != faults.Pause {
			continue
		}
		pauses++
		if d := time.Duration(rec.Op.Delay); d < 75*time.Second || d > 90*time.Second {
			t.Errorf("step %d: a pause of %v, want 75-90 s (min_pause, max_pause)", rec.Step, d)
		}
	}
	if pauses == 0 {
		t.Error("trial 12's trace holds no pause")
	}
	if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
		t.Errorf("trial 12's trace did not replay: %s", diff)
	}
}

// reportingTrial runs trial index of seed 1's 30 under the spec in file,
// which must fail with Mnesia's report of an inconsistent database.
func reportingTrial(t *testing.T, file string, index int) *engine.TrialResult {
	t.Helper()
	sp := extest.LoadSpec(t, file)
	seed := int64(1)
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 30, Seed: &seed, Shard: engine.Shard{Index: index, Count: 30}})
	r := sum.First
	if r == nil {
		t.Fatalf("%s: trial %d of seed 1 did not fail (outcomes %v)", file, index, sum.ByKind)
	}
	if r.Outcome.Kind != engine.PropertyViolated || !strings.Contains(r.Outcome.Detail, "inconsistent_database, running_partitioned_network") {
		t.Fatalf("%s: trial %d: %v; want Mnesia's report of an inconsistent database", file, index, r.Outcome)
	}
	return r
}
