package explain

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

func TestMain(m *testing.M) {
	tracer.MaybeRunZygote()
	testutil.LeakCheckMain(m)
}

// firstFailure runs a spec under POS, seed 1, until its first failure and
// returns its trace.
func firstFailure(t *testing.T, specPath string) string {
	t.Helper()
	sp, err := spec.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	sum, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: 200, Strategy: "pos", Seed: &seed, OutDir: t.TempDir(), StopOnFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.First == nil {
		t.Fatalf("%s: no failure in %d trials", specPath, sum.Trials)
	}
	return sum.First.TracePath
}

// TestExplainDemo: explain names the demo's race, as its README gives it:
// starter's LOCK to the server still in flight when writer's WRITE reaches
// it. One decision remains of the trace's, its flip checked; the pair's
// flip (LOCK delivered first) passes; the minimized trace replays; the
// messages and call sites are named; the probability curve rises to 1 at
// the end, its jump within the hold.
func TestExplainDemo(t *testing.T) {
	testutil.RequireDemo(t)
	trace := firstFailure(t, testutil.RepoPath("testdata", "demo", "demo.yaml"))
	out := t.TempDir()
	ex, err := Explain(context.Background(), trace, Options{Out: out, Budget: 2 * time.Minute, Continuations: 4})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteText(&b, ex)
	t.Log("\n" + b.String())
	if !ex.OneMinimal || len(ex.Races) != 1 {
		t.Fatalf("want one decision, 1-minimal; got %d (1-minimal %v)", len(ex.Races), ex.OneMinimal)
	}
	r := ex.Races[0]
	if r.Decision.Kind != sched.HoldDecision || r.Decision.Op.Kind != sched.Deliver || r.Decision.Op.Node != "starter" {
		t.Errorf("decision %v: want starter's delivery held", r.Decision)
	}
	if r.Second.Data != `"LOCK\n"` || r.Second.To != "server" || r.First.Data != `"WRITE\n"` || r.First.Node != "writer" {
		t.Errorf("race: first %v, then %v; want writer's WRITE, then starter's LOCK to server", r.First, r.Second)
	}
	if !r.Flipped || !r.Confirmed || !r.Concurrent {
		t.Errorf("flipped %v, confirmed %v, concurrent %v: want all", r.Flipped, r.Confirmed, r.Concurrent)
	}
	if r.First.File != "demoproc.c" || r.First.Func != "send_line" || r.Read == nil || r.Read.File != "lockserver.c" {
		t.Errorf("call sites: first %s, read %v: want demoproc.c (send_line), read in lockserver.c", r.First.Where(), r.Read)
	}
	if !strings.Contains(r.Summary, `starter's "LOCK\n" to server is still in flight at writer's "WRITE\n"`) {
		t.Errorf("summary %q", r.Summary)
	}
	if n := len(ex.Curve); n < 6 || ex.Curve[n-1].P() != 1 {
		t.Errorf("curve %v: want at least 6 points ending at 1", ex.Curve)
	}
	// The jump is bisected to one op, in the stretch where the hold kept
	// LOCK back: the decision's doing.
	if j := ex.Jump; j == nil || j.Ops != 1 || j.Race != 1 || j.To.P() <= j.From.P() {
		t.Errorf("jump %+v: want a rise at one op, race 1's", j)
	}
	if ex.Checked != 1 || ex.Dropped != 0 {
		t.Errorf("1-minimality: %d flips checked, %d dropped; want the one decision checked", ex.Checked, ex.Dropped)
	}
	if !ex.MinimizedReplays || ex.MinimizedDiverged != "" {
		t.Errorf("explain's own replay of the minimized trace: replays %v, %q", ex.MinimizedReplays, ex.MinimizedDiverged)
	}
	rr, err := engine.Replay(context.Background(), ex.MinimizedTrace, filepath.Join(out, "replay"))
	if err != nil || !rr.Same {
		t.Fatalf("the minimized trace does not replay: %v %+v", err, rr)
	}
}

// TestExplainChance: ms-1's and locks-1's crashes, with their traces'
// delays, give their failures only in some orders: alone in the default
// order they pass. With the order of the ops left to POS, some runs fail
// (not all: the order matters), and none without the crash, which is
// needed; placed at the trace's times rather than after its ops, the
// crash comes before the clients connect and never fails them.
func TestExplainChance(t *testing.T) {
	testutil.RequireDemo(t)
	for _, c := range []struct{ bug, bin string }{{"ms-1", "ms"}, {"locks-1", "locks1"}} {
		t.Run(c.bug, func(t *testing.T) {
			testutil.RequireBinary(t, testutil.RepoPath("testdata", "bin", "bugs", c.bug, c.bin))
			trace := firstFailure(t, testutil.RepoPath("testdata", "bugs", c.bug, "spec.yaml"))
			ex, err := Explain(context.Background(), trace, Options{Out: t.TempDir(), Budget: 3 * time.Minute, Continuations: 10})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			WriteText(&b, ex)
			t.Log("\n" + b.String())
			ch := ex.Chance
			if ch == nil {
				t.Fatal("no chance measured: the crash and its delays alone failed in the default order?")
			}
			if ch.Faults != 1 || ch.Timed || ch.Other == nil || ch.Other.Failed != 0 {
				t.Errorf("chance %+v: want one fault, after its op, none failing at its time", ch)
			}
			if ch.With.Failed == 0 || ch.With.Failed == ch.With.Runs {
				t.Errorf("with the crash: %d of %d failed; want some, not all", ch.With.Failed, ch.With.Runs)
			}
			if len(ch.Without) != 1 || !ch.Without[0].Needed || ch.Without[0].Failed != 0 {
				t.Errorf("without the crash: %+v; want needed, no failure", ch.Without)
			}
			if !strings.Contains(b.String(), "The fault and") || !strings.Contains(b.String(), ", needed\n") {
				t.Errorf("the text does not say it")
			}
			// The first run that failed is kept, and replays to its failure.
			if ch.Trace == "" {
				t.Fatal("no failing run kept")
			}
			rep, err := engine.Replay(context.Background(), ch.Trace, filepath.Join(t.TempDir(), "replay"))
			if err != nil || !rep.Same || failureOf(rep.Trial).String() != ex.Failure {
				t.Errorf("the kept run does not replay to the failure: %v %+v", err, rep)
			}
		})
	}
}
