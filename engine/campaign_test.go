package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestExampleSpecsPass: the shipped correct systems, one per language,
// pass under POS in their own namespaces, reaching each other by name.
func TestExampleSpecsPass(t *testing.T) {
	for _, lang := range []string{"c", "go", "rust", "java"} {
		t.Run(lang, func(t *testing.T) {
			skipUnlessTrials(t)
			sp, err := spec.Load(repoPath("testdata", "specs", "pingpong-"+lang+".yaml"))
			if err != nil {
				if strings.Contains(err.Error(), "does not exist") {
					t.Skipf("skipping: %v", err)
				}
				t.Fatal(err)
			}
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 5, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failures != 0 || sum.Trials != 5 {
				t.Fatalf("%d failures in %d trials: %v (first: %v)", sum.Failures, sum.Trials, sum.ByKind, sum.First)
			}
		})
	}
}

// TestUnstartableNodeStopsCampaign: a node that cannot start in trial 0
// (here a per-trial workdir that never exists, which loading cannot see)
// ends the campaign at once with the cause, not after N identical errors.
func TestUnstartableNodeStopsCampaign(t *testing.T) {
	skipUnlessTrials(t)
	sp, err := spec.Parse("s.yaml", []byte(`name: t
nodes:
  - name: client1
    role: client
    command: ["/bin/true"]
    workdir: "{{tmp}}/missing"
network:
  subnet: 10.78.0.0/24
`))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	_, err = Run(context.Background(), sp, RunOptions{Trials: 5, OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "stopped after trial 0, where node client1 could not start: ") || !strings.Contains(err.Error(), "changing directory") {
		t.Fatalf("got %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(out, "trials")); len(ents) != 1 {
		t.Fatalf("%d trial directories, want 1", len(ents))
	}
}

// TestManyTrialsNoPrealloc: asking for the most trials allowed costs
// nothing up front: memory follows the trials run, not the trials asked.
func TestManyTrialsNoPrealloc(t *testing.T) {
	skipUnlessTrials(t)
	sp, err := spec.Parse("s.yaml", []byte(`name: t
nodes:
  - name: client1
    role: client
    command: ["/bin/sh", "-c", "exit 3"]
network:
  subnet: 10.78.0.0/24
`))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sum, err := Run(context.Background(), sp, RunOptions{Trials: spec.MaxTrials, OutDir: t.TempDir(), StopOnFirst: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 1 || sum.Failures != 1 {
		t.Fatalf("%d trials, %d failures; want the first to fail and stop the campaign", sum.Trials, sum.Failures)
	}
	// One byte per trial asked for would be 10 MB.
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Fatalf("allocated %d bytes for one trial", d)
	}
	if _, err := Run(context.Background(), sp, RunOptions{Trials: spec.MaxTrials + 1, OutDir: t.TempDir()}); err == nil {
		t.Fatal("more than spec.MaxTrials accepted")
	}
}

// TestUniqueLinesFirst: a failing trial's features no passing trial had
// are named lines first, then the lines it repeated far beyond any passing
// trial, then kinds, then orderings, each class in the order first seen;
// what a passing trial showed is left out.
func TestUniqueLinesFirst(t *testing.T) {
	cc := newCampaignCoverage()
	shared := coverage.Feature{Class: coverage.ClassTemplate, Key: "installed snapshot"}
	retry := coverage.Feature{Class: coverage.ClassTemplate, Key: "retrying"}
	cc.cov.Merge(coverage.Features{shared, retry})
	cc.note(&TrialResult{Index: 0, Outcome: sched.Outcome{Kind: sched.Pass}}, coverage.Features{shared, retry},
		map[string]int{"installed snapshot": 3, "retrying": 5})
	cc.note(&TrialResult{Index: 1, Outcome: sched.Outcome{Kind: sched.Pass}}, coverage.Features{shared},
		map[string]int{"installed snapshot": 1})
	failing := coverage.Features{
		{Class: coverage.ClassOrdering, Key: "a ⇒ b | crash"},
		shared,
		{Class: coverage.ClassKind, Key: ":7000 PUT"},
		{Class: coverage.ClassOrdering, Key: "b ⇒ a | "},
		{Class: coverage.ClassTemplate, Key: "panic: ·"},
		retry,
	}
	cc.cov.Merge(failing)
	r := &TrialResult{Index: 2, Outcome: sched.Outcome{Kind: sched.ClientFailed}}
	// 441 > 4 × 3: named; 20 is not above 4 × 5; "panic: ·" is unique
	// already and not named twice.
	cc.note(r, failing, map[string]int{"installed snapshot": 441, "retrying": 20, "panic: ·": 12})
	cc.unique([]*TrialResult{r})
	want := []string{"template panic: ·", "template installed snapshot ×441 (a passing trial's node: at most 3)",
		"kind :7000 PUT", "a ⇒ b | crash", "b ⇒ a"}
	if !slices.Equal(r.Unique, want) {
		t.Errorf("unique features %q, want %q", r.Unique, want)
	}
}
