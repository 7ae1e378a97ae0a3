package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadSpecs: every file in testdata/specs/bad fails to load with exactly
// the one-line error in its .err file (file:line: field: message).
func TestBadSpecs(t *testing.T) {
	files, err := filepath.Glob(repoPath("testdata", "specs", "bad", "*.yaml"))
	if err != nil || len(files) < 20 {
		t.Fatalf("want at least 20 bad specs, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatalf("no .err file: %v", err)
			}
			_, err = LoadSpec(f)
			if err == nil {
				t.Fatal("loaded without error")
			}
			got := strings.Replace(err.Error(), f, name, 1)
			if strings.Contains(got, "\n") {
				t.Fatalf("error spans lines: %q", got)
			}
			if got != strings.TrimSpace(string(want)) {
				t.Fatalf("error\n  got  %s\n  want %s", got, strings.TrimSpace(string(want)))
			}
		})
	}
}

// TestGoodSpecs: the shipped examples load.
func TestGoodSpecs(t *testing.T) {
	files, _ := filepath.Glob(repoPath("testdata", "specs", "*.yaml"))
	demo, _ := filepath.Glob(repoPath("testdata", "demo", "*.yaml"))
	for _, f := range append(files, demo...) {
		if _, err := LoadSpec(f); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

// TestExampleSpecsPass: the shipped correct systems, one per language,
// pass under POS in their own namespaces, reaching each other by name.
func TestExampleSpecsPass(t *testing.T) {
	for _, lang := range []string{"c", "go", "rust", "java"} {
		t.Run(lang, func(t *testing.T) {
			skipUnlessTrials(t)
			spec, err := LoadSpec(repoPath("testdata", "specs", "pingpong-"+lang+".yaml"))
			if err != nil {
				if strings.Contains(err.Error(), "does not exist") {
					t.Skipf("skipping: %v", err)
				}
				t.Fatal(err)
			}
			sum, err := Run(context.Background(), spec, RunOptions{Trials: 5, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failures != 0 || sum.Trials != 5 {
				t.Fatalf("%d failures in %d trials: %v (first: %v)", sum.Failures, sum.Trials, sum.ByKind, sum.First)
			}
		})
	}
}
