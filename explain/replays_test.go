package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/spec"
)

// replaySpecs are the specs TestExplainWhatReplays runs by default: a
// crash triggered at a step (a replay once took such a crash in a lull
// where the trace had a sleep), and a Rust server with a thread per
// connection (whose reads on one inbox were once named by their position
// alone, another connection's in a forced run).
var replaySpecs = []string{"bugs/crash-1/spec-steps.yaml", "bugs/tpc-1/spec.yaml"}

// TestExplainWhatReplays holds explain to what replay does: every failing
// trace of a campaign (POS, seed 1) that `lockstep replay` reproduces,
// explain explains without an error, and the minimized trace it writes
// replays in turn (explain's own replay says so, and `lockstep replay`'s
// agrees). LOCKSTEP_EXPLAIN_REPLAYS=1 runs it over every bug of
// testdata/bugs as well (minutes of trials); a comma-separated list of
// spec paths under testdata runs those. With LOCKSTEP_EXPLAIN_JSON_OUT=DIR
// it writes the explanation of each bug's first trace (POS, seed 1: the
// one TestExplainBugSuite explains) to DIR/BUG/explain.json, which
// TestBugTableFromJSON makes the bug table of.
func TestExplainWhatReplays(t *testing.T) {
	testutil.RequireDemo(t)
	specs, traces := replaySpecs, 2
	switch env := os.Getenv("LOCKSTEP_EXPLAIN_REPLAYS"); env {
	case "":
	case "1":
		for _, bug := range slices.Sorted(maps.Keys(triggering)) {
			if rel := filepath.Join("bugs", bug, "spec.yaml"); !slices.Contains(specs, rel) {
				specs = append(specs, rel)
			}
		}
		traces = 3
	default:
		specs = strings.Split(env, ",")
	}
	jsonOut := os.Getenv("LOCKSTEP_EXPLAIN_JSON_OUT")
	explained, replayed, minimized := 0, 0, 0
	for _, rel := range specs {
		t.Run(rel, func(t *testing.T) {
			for i, trace := range failures(t, testutil.RepoPath("testdata", rel), traces) {
				out := filepath.Join(t.TempDir(), fmt.Sprint(i))
				rr, err := engine.Replay(context.Background(), trace, filepath.Join(out, "replay"))
				if err != nil || !rr.Same {
					t.Logf("%s does not replay (%v %+v): not explain's to explain", trace, err, rr)
					continue
				}
				replayed++
				ex, err := Explain(context.Background(), trace, Options{Out: filepath.Join(out, "explain"), Budget: 3 * time.Minute, Continuations: -1})
				if err != nil {
					t.Errorf("%s replays, but explain: %v", trace, err)
					continue
				}
				explained++
				if bug, ok := bugOf(rel); ok && i == 0 && jsonOut != "" {
					writeJSON(t, filepath.Join(jsonOut, bug, "explain.json"), ex)
				}
				if !ex.MinimizedReplays {
					t.Errorf("%s: the minimized trace does not replay: %s", trace, ex.MinimizedDiverged)
					continue
				}
				mr, err := engine.Replay(context.Background(), ex.MinimizedTrace, filepath.Join(out, "mreplay"))
				if err != nil || !mr.Same {
					t.Errorf("%s: explain replayed its minimized trace, lockstep replay does not: %v %+v", trace, err, mr)
					continue
				}
				minimized++
			}
		})
	}
	t.Logf("%d failing traces replayed, %d explained, %d minimized traces replayed", replayed, explained, minimized)
	if replayed == 0 {
		t.Error("no failing trace replayed: nothing was checked")
	}
}

// bugOf is the bug whose spec.yaml rel (under testdata) is.
func bugOf(rel string) (string, bool) {
	dir, file := filepath.Split(rel)
	bug := filepath.Base(dir)
	return bug, file == "spec.yaml" && filepath.Dir(filepath.Clean(dir)) == "bugs"
}

func writeJSON(t *testing.T, path string, ex *Explanation) {
	t.Helper()
	b, err := json.MarshalIndent(ex, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Errorf("writing the explanation: %v", err)
	}
}

// failures runs a spec under POS, seed 1, until n of its trials failed
// (or its trials ran out) and returns their traces.
func failures(t *testing.T, specPath string, n int) []string {
	t.Helper()
	sp, err := spec.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	var traces []string
	out := t.TempDir()
	// The first failure of the campaigns of seeds 1, 2, …: a campaign
	// stops at its first, which spares the trials after it.
	for len(traces) < n {
		sum, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: 200, Strategy: "pos", Seed: &seed, OutDir: filepath.Join(out, fmt.Sprint(seed)), StopOnFirst: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.First == nil {
			break
		}
		traces = append(traces, sum.First.TracePath)
		seed++
	}
	if len(traces) == 0 {
		t.Fatalf("%s: no failure in 200 trials", specPath)
	}
	return traces
}
