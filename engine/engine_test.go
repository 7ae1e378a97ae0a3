package engine

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

func TestMain(m *testing.M) {
	tracer.MaybeRunZygote()
	testutil.LeakCheckMain(m)
}

// repoPath keeps the name the engine's many tests call.
func repoPath(parts ...string) string { return testutil.RepoPath(parts...) }

func requireTrials(t *testing.T) { skipUnlessTrials(t) }

func skipUnlessTrials(tb testing.TB) {
	tb.Helper()
	testutil.RequireDemo(tb)
}

func loadDemo(t *testing.T, name string) *spec.Spec {
	t.Helper()
	sp, err := spec.Load(repoPath("testdata", "demo", name))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// The buggy demo fails under POS within 200 trials, and its trace replays
// to the same failure with the same op sequence 20 times out of 20.
func TestDemoBugFoundAndReplayed(t *testing.T) {
	requireTrials(t)
	sp := loadDemo(t, "demo.yaml")
	out := t.TempDir()
	sum, err := Run(context.Background(), sp, RunOptions{Trials: 200, Strategy: "pos", OutDir: out, StopOnFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.First == nil {
		t.Fatalf("POS found no failure in %d trials: %v", sum.Trials, sum.ByKind)
	}
	t.Logf("first failure at trial %d of %d: %v", sum.First.Index, sum.Trials, sum.First.Outcome)
	if sum.First.Outcome.Kind != NodeCrashed {
		t.Fatalf("want node-crashed, got %v", sum.First.Outcome)
	}
	for i := 0; i < 20; i++ {
		rr, err := Replay(context.Background(), sum.First.TracePath, filepath.Join(out, "replay"))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Fatalf("replay %d differs: %s", i, rr.Diff)
		}
	}
}

// The fixed demo passes 200 trials: the failures above are the bug's.
func TestDemoFixedPasses(t *testing.T) {
	requireTrials(t)
	sp := loadDemo(t, "demo-fixed.yaml")
	sum, err := Run(context.Background(), sp, RunOptions{Trials: 200, Strategy: "pos", OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failures != 0 || sum.Errors != 0 {
		t.Fatalf("fixed demo: %v; first %v", sum.ByKind, sum.First)
	}
	// Every close's FIN reached its peer: none was waited for in vain (a
	// close with bytes still queued sends its FIN only when lockstep has
	// delivered them).
	fins := 0
	for _, r := range sum.Results {
		fins += r.Stats.FinWaits
		if r.Stats.FinWaitsExpired != 0 {
			t.Fatalf("trial %d: %d of %d FIN waits expired", r.Index, r.Stats.FinWaitsExpired, r.Stats.FinWaits)
		}
	}
	if fins == 0 {
		t.Fatal("no trial closed a connection between nodes: the FIN check above tested nothing")
	}
}

// --jobs 2 gives the same outcome per trial as --jobs 1.
func TestJobsDeterministic(t *testing.T) {
	requireTrials(t)
	sp := loadDemo(t, "demo.yaml")
	outcomes := func(jobs int) []string {
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 12, Strategy: "pos", Jobs: jobs, OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		var o []string
		for _, r := range sum.Results {
			o = append(o, string(r.Outcome.Kind)+"/"+itoa(r.Outcome.Steps))

		}
		return o
	}
	a, b := outcomes(1), outcomes(2)
	if len(a) != len(b) {
		t.Fatalf("jobs 1: %v\njobs 2: %v", a, b)
	}
	// Outcome and step count of every trial must match: a trial's schedule
	// must not depend on which job ran it or what ran beside it.
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("trial %d differs: jobs 1 %s, jobs 2 %s", i, a[i], b[i])
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
