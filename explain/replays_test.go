package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"os/exec"
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
// where the trace had a sleep), a Rust server with a thread per
// connection (whose reads on one inbox were once named by their position
// alone, another connection's in a forced run), and a UDP echo whose
// datagram a drop fault loses (its seed-2 trace delivers a datagram before
// one sent earlier: named by delivery position, the forced run delivered
// the one the trace had lost, and explain failed).
var replaySpecs = []string{"bugs/crash-1/spec-steps.yaml", "bugs/tpc-1/spec.yaml", "specs/faults/drop.yaml"}

// TestExplainWhatReplays holds explain to what replay does: every failing
// trace of a campaign (POS, seed 1) that `lockstep replay` reproduces,
// explain explains without an error, and the minimized trace it writes
// replays in turn (explain's own replay says so, and `lockstep replay`'s
// agrees). LOCKSTEP_EXPLAIN_REPLAYS=1 runs it over every bug of
// testdata/bugs as well (minutes of trials); =specs over every spec of
// testdata/specs but the invalid ones of bad/ (a spec that does not fail
// within its cap is skipped: most check a mechanism and pass; about ten
// minutes); =examples over the examples' specs whose programs are there
// (hours: real systems, traces of thousands of ops); a comma-separated
// list of spec paths under testdata (../examples/… for an example's) runs
// those. scripts/explain-all.sh does the same from the command line, with
// the examples, and tabulates it. With LOCKSTEP_EXPLAIN_JSON_OUT=DIR
// it writes the explanation of each bug's first trace (POS, seed 1: the
// one TestExplainBugSuite explains) to DIR/BUG/explain.json, which
// TestBugTableFromJSON makes the bug table of.
func TestExplainWhatReplays(t *testing.T) {
	testutil.RequireDemo(t)
	specs, traces, mayPass := replaySet(t, os.Getenv("LOCKSTEP_EXPLAIN_REPLAYS"))
	jsonOut := os.Getenv("LOCKSTEP_EXPLAIN_JSON_OUT")
	explained, replayed, minimized := 0, 0, 0
	for _, rel := range specs {
		t.Run(rel, func(t *testing.T) {
			path := testutil.RepoPath("testdata", rel)
			sp, err := spec.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			trials := trialCap(rel, sp, mayPass)
			found := failures(t, sp, traces, trials)
			switch {
			case len(found) == 0 && mayPass:
				t.Skipf("no failure in %d trials", trials)
			case len(found) == 0:
				t.Fatalf("%s: no failure in %d trials", path, trials)
			}
			for i, trace := range found {
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

// replaySet is what a value of LOCKSTEP_EXPLAIN_REPLAYS runs: the specs
// (paths under testdata), the failing traces to explain of each, and
// whether a spec may pass all its trials.
func replaySet(t *testing.T, env string) (specs []string, traces int, mayPass bool) {
	switch env {
	case "":
		return replaySpecs, 2, false
	case "1":
		specs = slices.Clone(replaySpecs)
		for _, bug := range slices.Sorted(maps.Keys(triggering)) {
			if rel := filepath.Join("bugs", bug, "spec.yaml"); !slices.Contains(specs, rel) {
				specs = append(specs, rel)
			}
		}
		return specs, 3, false
	case "specs":
		return testdataSpecs(t), 2, true
	case "examples":
		return exampleSpecs(t), 2, true
	}
	return strings.Split(env, ","), 2, false
}

// testdataSpecs are the specs under testdata/specs (as paths under
// testdata) but those of bad/, which are invalid on purpose. The hostile/
// ones are in: their programs attack the sandbox, and what fails there
// (a node crashed, a livelock) is a failure like any other.
func testdataSpecs(t *testing.T) []string {
	t.Helper()
	root := testutil.RepoPath("testdata")
	var specs []string
	err := filepath.WalkDir(filepath.Join(root, "specs"), func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "bad":
			return filepath.SkipDir
		case d.IsDir() || filepath.Ext(path) != ".yaml":
			return nil
		}
		rel, err := filepath.Rel(root, path)
		specs = append(specs, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// exampleSpecs are the specs of the examples (examples/*/*.yaml, as paths
// under testdata: ../examples/…) whose programs are there: an example
// needs its real system installed (.ci/deps.sh) and its own programs
// built (its README says how); one without is left out, and logged.
func exampleSpecs(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(testutil.RepoPath("examples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, path := range paths {
		sp, err := spec.Load(path)
		if err != nil {
			continue // not a spec (a compose file, a manifest)
		}
		if missing := missingProgram(t, sp); missing != "" {
			t.Logf("%s: left out, %s is not there", path, missing)
			continue
		}
		rel, err := filepath.Rel(testutil.RepoPath("testdata"), path)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, rel)
	}
	return specs
}

// missingProgram is the first program a spec's nodes start that is not
// an executable file ("" when all are), its templates expanded as for a
// trial: a path, or a name looked up in PATH.
func missingProgram(t *testing.T, sp *spec.Spec) string {
	addrs := map[string]netip.Addr{}
	for i, n := range sp.Nodes {
		addrs[n.Name] = netip.AddrFrom4([4]byte{10, 77, 0, byte(i + 1)})
	}
	dir := t.TempDir()
	for _, n := range sp.Nodes {
		if n.Image != nil {
			continue
		}
		argv, _, _, err := sp.Expand(n.Name, spec.TemplateVars{TrialDir: dir, NodeDir: dir, Seed: 1, Addrs: addrs})
		if err != nil || len(argv) == 0 {
			return n.Name + "'s command"
		}
		if !strings.Contains(argv[0], "/") {
			if _, err := exec.LookPath(argv[0]); err != nil {
				return argv[0]
			}
			continue
		}
		if st, err := os.Stat(argv[0]); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return argv[0]
		}
	}
	return ""
}

// trialCap is how many trials a campaign for a failure may run: 200, or
// where a spec may pass (testdata/specs), its own trial count within
// [20, 100], 5 under hostile/ and limits/, whose trials run into their
// real-time limits, and 20 for an example's.
func trialCap(rel string, sp *spec.Spec, mayPass bool) int {
	switch {
	case !mayPass:
		return 200
	case strings.HasPrefix(rel, filepath.Join("specs", "hostile")), strings.HasPrefix(rel, filepath.Join("specs", "limits")):
		return 5
	case strings.HasPrefix(rel, filepath.Join("..", "examples")):
		return 20 // a real system's trials take seconds; every example that fails here does within 14
	}
	return min(max(sp.Trials, 20), 100)
}

// failures runs sp under POS, seeds 1, 2, …, until n of its campaigns of
// at most trials trials failed (or one did not) and returns the traces of
// their first failures.
func failures(t *testing.T, sp *spec.Spec, n, trials int) []string {
	t.Helper()
	seed := int64(1)
	var traces []string
	out := t.TempDir()
	// The first failure of the campaigns of seeds 1, 2, …: a campaign
	// stops at its first, which spares the trials after it.
	for len(traces) < n {
		sum, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: trials, Strategy: "pos", Seed: &seed, OutDir: filepath.Join(out, fmt.Sprint(seed)), StopOnFirst: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.First == nil {
			break
		}
		traces = append(traces, sum.First.TracePath)
		seed++
	}
	return traces
}
