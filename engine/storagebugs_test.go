package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// The suite's storage bugs fail through lockstep's storage faults alone:
// POS finds each within a few trials, with the fault in the failing trace,
// and the trace replays to the same failure; the fixed variant passes the
// same faults, and for the two bugs a power cut needs, a process crash in
// the same window passes too (the page cache survives it).
func TestFaultBugsStorage(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct {
		bug, bin string
		fault    sched.Kind // in every failing trace
		crash    bool       // spec-crash.yaml: the same window with crashes, which must pass
	}{
		{"power-1", "power1", faults.Power, true},
		{"rename-1", "rename1", faults.Power, true},
		{"corrupt-1", "corrupt1", faults.Corrupt, false},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			if _, err := os.Stat(repoPath("testdata", "bin", "bugs", tc.bug, tc.bin)); err != nil {
				t.Skipf("skipping: %v (make testdata builds it)", err)
			}
			load := func(name string) *spec.Spec {
				sp, err := spec.Load(repoPath("testdata", "bugs", tc.bug, name))
				if err != nil {
					t.Fatal(err)
				}
				return sp
			}
			out := t.TempDir()
			first := firstClientFailure(t, load("spec.yaml"), RunOptions{Trials: 20, Strategy: "pos", OutDir: filepath.Join(out, "bug"), StopOnFirst: true})
			faulted := false
			for _, rec := range traceRecords(t, first) {
				faulted = faulted || rec.Op.Kind == tc.fault
			}
			if !faulted {
				t.Fatalf("trial %d failed without a %v in its trace", first.Index, tc.fault)
			}
			rr, err := Replay(context.Background(), first.TracePath, filepath.Join(out, "replay"))
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Same {
				t.Fatalf("replay differs: %s", rr.Diff)
			}
			passes := func(name string) {
				t.Helper()
				sum, err := Run(context.Background(), load(name), RunOptions{Trials: 5, Strategy: "pos", OutDir: filepath.Join(out, name)})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Failures != 0 || sum.Errors != 0 {
					t.Fatalf("%s: %v", name, sum.ByKind)
				}
			}
			passes("spec-fixed.yaml")
			if tc.crash {
				passes("spec-crash.yaml")
			}
		})
	}
}
