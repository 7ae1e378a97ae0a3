package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/spec"
)

func TestCycle(t *testing.T) {
	for _, tt := range []struct {
		ops  string
		want string
	}{
		{"a b a b a b", "a b"},
		{"x a b c a b c a b c", "a b c"},
		{"a a a", "a"},
		{"a b c a b c", ""}, // twice is not a cycle yet
		{"a b c d e f", ""},
		{"", ""},
	} {
		got := strings.Join(cycle(strings.Fields(tt.ops)), " ")
		if got != tt.want {
			t.Errorf("cycle(%q) = %q, want %q", tt.ops, got, tt.want)
		}
	}
}

// Two nodes bouncing a message forever end as a livelock, a bug outcome,
// with the cycle of ops they repeat named, and the trace replays to it.
func TestLivelock(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "livelock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 2, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ByKind[Livelock] != 2 || !Livelock.IsFailure() {
		t.Fatalf("want 2 livelocks, got %v", sum.ByKind)
	}
	r := sum.First
	d := r.Outcome.Detail
	if !strings.Contains(d, "ops ran while virtual time stood at") || !strings.Contains(d, "repeat a cycle of") ||
		!strings.Contains(d, "client/0/t0 send") || !strings.Contains(d, "server/0/t0 recv") {
		t.Fatalf("detail %q does not name the cycle", d)
	}
	if r.Outcome.Steps < sp.Limits.LivelockSteps || r.Outcome.Steps > sp.Limits.LivelockSteps+100 {
		t.Fatalf("stopped at step %d, livelock_steps %d", r.Outcome.Steps, sp.Limits.LivelockSteps)
	}
	if !slices.ContainsFunc(sum.Results, func(r *TrialResult) bool { return r.TracePath != "" }) {
		t.Fatal("no trace written")
	}
	rr, err := Replay(t.Context(), r.TracePath, out+"/replay")
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replay differs: %s", rr.Diff)
	}
}

// With a livelock bound too high to reach, the real-time limit ends the
// same trial as a livelock too (ops kept flowing: lockstep was not stuck),
// not as a lockstep error.
func TestLivelockRealTime(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "livelock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sp.Limits.LivelockSteps = 10_000_000
	sp.Limits.Steps = 10_000_000 // on an idle machine 100,000 steps take under 2 s
	sp.Limits.RealTime = 2 * time.Second
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	o := sum.Results[0].Outcome
	if o.Kind != Livelock || !strings.Contains(o.Detail, "real-time limit 2s reached") || !strings.Contains(o.Detail, "repeat a cycle of") {
		t.Fatalf("want a livelock at the real-time limit, got %v", o)
	}
}
