package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
