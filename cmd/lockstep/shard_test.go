package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/report"
)

// TestShardBadInput: bad shard specs, flags and merges exit 2 with one
// line naming the problem, before any trial runs.
func TestShardBadInput(t *testing.T) {
	demo := shellSpec
	dir := t.TempDir()
	t.Setenv("JOB_COMPLETION_INDEX", "")
	t.Setenv("LOCKSTEP_TEST_INDEX", "9")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", demo, "--shard", "8/8"}, "--shard 8/8: the shard index must be an integer between 0 and 7"},
		{[]string{"run", demo, "--shard", "x"}, `--shard "x": want I/N or N`},
		{[]string{"run", demo, "--shard", "4"}, "--shard 4: JOB_COMPLETION_INDEX is not set"},
		{[]string{"run", demo, "--shard", "4", "--shard-index-env", "LOCKSTEP_TEST_INDEX"}, "LOCKSTEP_TEST_INDEX=9: the shard index must be"},
		{[]string{"run", demo, "--shard", "1/2", "--stop-on-first"}, "--stop-on-first cannot be combined with --shard"},
		{[]string{"merge"}, "merge: want at least one DIR"},
		{[]string{"merge", "/no/such/dir"}, "/no/such/dir"},
		{[]string{"merge", dir}, "no shard result (shard.json)"},
		{[]string{"k8s", demo, "--shards", "0", "--image", "i", "--pvc", "p"}, "--shards 0: want between 1 and"},
		{[]string{"k8s", demo, "--shards", "2", "--image", "i", "--pvc", "Bad_Claim"}, `--pvc "Bad_Claim"`},
		{[]string{"k8s", demo, "--shards", "2", "--pvc", "p"}, `"image" not set`},
		{[]string{"k8s", "/no/such/spec.yaml", "--shards", "2", "--image", "i", "--pvc", "p"}, "/no/such/spec.yaml"},
		{[]string{"k8s", demo, "--shards", "2", "--image", "i", "--pvc", "p", "--jobs", "0"}, "--jobs must be at least 1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", code, stderr, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("bad input left %d entries", len(ents))
	}
}

// TestK8sCommand: the manifest goes to --out or standard output and runs
// the shards the command line asked for.
func TestK8sCommand(t *testing.T) {
	demo := shellSpec
	code, out, stderr := runCLI(t, "k8s", demo, "--shards", "8", "--image", "localhost/lockstep:0.1.0", "--pvc", "results",
		"--trials", "1000", "--seed", "-7", "--strategy", "pos+", "-j", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"completionMode: Indexed", "completions: 8", "claimName: results",
		"- --shard\n            - \"8\"", "- --trials\n            - \"1000\"", "- --seed\n            - \"-7\"", "- --strategy\n            - pos+", "- --jobs\n            - \"2\""} {
		if !strings.Contains(out, want) {
			t.Errorf("manifest lacks %q:\n%s", want, out)
		}
	}
	p := filepath.Join(t.TempDir(), "job.yaml")
	if code, out, stderr := runCLI(t, "k8s", demo, "--shards", "2", "--image", "i", "--pvc", "p", "-o", p); code != 0 || !strings.Contains(out, "lockstep merge /results/lockstep-shell") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), "kind: Job") {
		t.Fatalf("%s: %v", b, err)
	}
}

// TestShardRunAndMerge: `run --shard I/N` for each shard, then `merge`,
// report what `run` reports for the whole campaign: the same failing
// trials, summary table, JSON and JUnit (but for real time and paths),
// and the same exit status. JOB_COMPLETION_INDEX names the shard as a
// Kubernetes Indexed Job does.
func TestShardRunAndMerge(t *testing.T) {
	requireTrials(t)
	testutil.RequireBinary(t, "../../testdata/bin/demo/lockserver")
	demo := "../../testdata/demo/demo.yaml"
	dir := t.TempDir()
	one, shards := filepath.Join(dir, "one"), filepath.Join(dir, "shards")
	common := []string{demo, "--trials", "12", "--seed", "1", "-q"}
	code, wantOut, stderr := runCLI(t, append([]string{"run", "-o", one, "--json", filepath.Join(dir, "one.json"), "--junit", filepath.Join(dir, "one.xml")}, common...)...)
	if code != 1 {
		t.Fatalf("one process: exit %d, want 1 (trial 8 fails): %s", code, stderr)
	}
	for i := range 3 {
		t.Setenv("JOB_COMPLETION_INDEX", string(rune('0'+i)))
		if code, out, stderr := runCLI(t, append([]string{"run", "-o", shards, "--shard", "3"}, common...)...); code != 0 || !strings.Contains(out, "result in "+filepath.Join(shards, "shard-"+string(rune('0'+i))+"-of-3", "shard.json")) {
			t.Fatalf("shard %d: exit %d: %s%s", i, code, out, stderr)
		}
	}
	code, gotOut, stderr := runCLI(t, "merge", shards, "--json", filepath.Join(dir, "merged.json"), "--junit", filepath.Join(dir, "merged.xml"))
	if code != 1 {
		t.Fatalf("merge: exit %d, want 1: %s", code, stderr)
	}
	norm := func(s, out string) string {
		s = strings.ReplaceAll(s, out, "OUT")
		for i := range 3 {
			s = strings.ReplaceAll(s, "/shard-"+string(rune('0'+i))+"-of-3", "")
		}
		lines := strings.Split(s, "\n")
		var keep []string
		inUnique := false
		for _, l := range lines {
			// A merge does not name the features no passing trial showed
			// (shards keep counts, not each trial's features): one
			// process's summary does, and that is the one difference.
			switch {
			case strings.Contains(l, `"unique_features": [`):
				inUnique = true
				continue
			case inUnique:
				inUnique = !strings.HasPrefix(strings.TrimSpace(l), "]")
				continue
			}
			if !strings.Contains(l, " trials in ") && !strings.Contains(l, "duration_s") && !strings.Contains(l, "time=") &&
				!strings.Contains(l, "features no passing trial showed") {
				keep = append(keep, strings.TrimSuffix(l, ",")) // the field before unique_features
			}
		}
		return strings.Join(keep, "\n")
	}
	if norm(gotOut, shards) != norm(wantOut, one) {
		t.Errorf("merge says\n%s\none process said\n%s", gotOut, wantOut)
	}
	for _, ext := range []string{"json", "xml"} {
		g, _ := os.ReadFile(filepath.Join(dir, "merged."+ext))
		w, _ := os.ReadFile(filepath.Join(dir, "one."+ext))
		if norm(string(g), shards) != norm(string(w), one) {
			t.Errorf("merged %s\n%s\none process's\n%s", ext, g, w)
		}
	}
	var j report.JSONSummary
	b, _ := os.ReadFile(filepath.Join(dir, "merged.json"))
	if err := json.Unmarshal(b, &j); err != nil || j.Trials != 12 || j.First == nil || j.First.Index != 8 {
		t.Fatalf("merged JSON %s: %v", b, err)
	}
}
