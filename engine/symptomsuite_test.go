package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/spec"
)

// The bug suite's production logs (testdata/bugs/*/symptom.log) reproduce
// their bugs: explore with the symptom, a fixed seed and budget, stops at
// the first trial that reproduces it, which fails the way the bug does
// (the symptom's last line printed, or for a hang the failure its
// failure line names), and whose trace replays to the same end. lease-1's
// excerpt ends at client a's complaint: trials where only b complained
// fail first, and the campaign goes past them.
// scripts/symptom-suite.sh measures them all against POS.
func TestSymptomSuite(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct {
		bug, bin string
		seed     int64
		budget   int
		kind     OutcomeKind // of the reproducing trial
		node     string      // that printed the last line (PropertyViolated)
		passBy   bool        // a failure that does not reproduce it comes first
	}{
		{"crash-1", "crash1", 1, 10, PropertyViolated, "client", false},
		{"locks-2", "locks2", 1, 10, VTimeLimit, "", false},
		{"ms-1", "ms", 2, 20, PropertyViolated, "caller", false},
		{"gproc-3", "gproc3", 3, 10, Deadlock, "", false},
		{"lease-1", "lease1", 1, 10, PropertyViolated, "a", true},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			dir := repoPath("testdata", "bugs", tc.bug)
			if _, err := os.Stat(repoPath("testdata", "bin", "bugs", tc.bug, tc.bin)); err != nil {
				t.Skipf("skipping: %v (make testdata builds it)", err)
			}
			sp, err := spec.Load(filepath.Join(dir, "spec.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, "symptom.log"))
			if err != nil {
				t.Fatal(err)
			}
			sy, err := coverage.ReadSymptom(f, "symptom.log")
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			seed := tc.seed
			sum, err := Run(t.Context(), sp, RunOptions{Trials: tc.budget, Seed: &seed, Strategy: Explore, Symptom: sy,
				OutDir: t.TempDir(), StopOnFirst: true, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			s := sum.Symptom
			if s == nil || s.Reproduced < 0 {
				t.Fatalf("not reproduced in %d trials: %+v", sum.Trials, s)
			}
			if sum.Trials != s.Reproduced+1 {
				t.Errorf("the campaign ran %d trials, reproduced by trial %d: it did not stop there", sum.Trials, s.Reproduced)
			}
			if first := sum.First.Index; tc.passBy != (first < s.Reproduced) {
				t.Errorf("first failure at trial %d, reproduced by trial %d", first, s.Reproduced)
			}
			r := sum.Results[s.Reproduced]
			o := r.Outcome
			if o.Kind != tc.kind || tc.node != "" && (o.Property != "symptom" || o.Node != tc.node) {
				t.Errorf("trial %d reproduced it as %v", r.Index, o)
			}
			if r.Verify == nil || !r.Verify.Same {
				t.Errorf("trial %d's trace did not replay: %+v", r.Index, r.Verify)
			}
			t.Logf("reproduced by trial %d (%s), %d of %d lines matched: %v", r.Index, r.Plan, r.Symptom, s.Lines, o)
		})
	}
}
