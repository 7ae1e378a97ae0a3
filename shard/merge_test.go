package shard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/lockstep-dev/lockstep/spec"
)

// fakeCampaign is what a campaign of total trials would report for shard
// sh (all of it when sh.Count is 0), with outcomes that depend only on
// the trial, written below out as a run writes them.
func fakeCampaign(t *testing.T, out string, seed int64, total int, sh engine.Shard) *engine.Summary {
	t.Helper()
	sp := &spec.Spec{Name: "demo", Path: "/specs/demo.yaml", Digest: "f0244a13b3329c4c63a8ee4d6efad715"}
	sum := &engine.Summary{Spec: sp, Strategy: "pos", Seed: seed, Planned: total, Shard: sh, ByKind: map[engine.OutcomeKind]int{}}
	whole := sh
	if whole.Count == 0 {
		whole = engine.Shard{Index: 0, Count: 1}
	}
	for p := range whole.Size(total) {
		i := whole.Trial(p)
		r := &engine.TrialResult{Index: i, Seed: engine.TrialSeed(seed, i), Duration: time.Duration(i) * time.Millisecond,
			Outcome: engine.Outcome{Kind: engine.Pass, Steps: 10 + i}}
		r.Dir = filepath.Join(out, "trials", strings.Repeat("0", 4)+string(rune('0'+i%10)))
		switch {
		case i%7 == 3:
			r.Outcome = engine.Outcome{Kind: engine.NodeCrashed, Detail: "node server/0 killed by aborted", Node: "server", Steps: 18, VTime: time.Second}
		case i == 5:
			r.Outcome = engine.Outcome{Kind: engine.Error, Detail: "lost a tracee", Steps: 3}
		}
		if r.Outcome.Kind != engine.Pass {
			r.TracePath = filepath.Join(r.Dir, "trace.jsonl")
		}
		r.Stats.Stops = uint64(100 + i)
		sum.Add(r)
	}
	sum.Duration = time.Second
	return sum
}

// writeShards writes the shards of a fake campaign below dir.
func writeShards(t *testing.T, dir string, seed int64, total, n int) {
	t.Helper()
	for i := range n {
		sh := engine.Shard{Index: i, Count: n}
		d := filepath.Join(dir, DirName(sh))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(d, fakeCampaign(t, d, seed, total, sh), time.Unix(int64(1000+i), 0)); err != nil {
			t.Fatal(err)
		}
	}
}

// normalized is a campaign's JSON and JUnit reports and its text summary
// (with --stats when stats) with the real time, the output directory and
// the failing trials' unique features taken out, the only things in which
// a merged campaign may differ from one process's.
func normalized(t *testing.T, sum *engine.Summary, stats bool, outs ...string) (string, string) {
	t.Helper()
	// A merge does not name the features no passing trial showed (shards
	// keep their features' counts, not each trial's features): one
	// process's summary does, and that is left out of the comparison.
	for _, r := range sum.Results {
		defer func(u []string) { r.Unique = u }(r.Unique)
		r.Unique = nil
	}
	var js, text, junit bytes.Buffer
	j := report.NewJSONSummary(report.Campaign{Spec: sum.Spec.Name, Summary: sum})
	j.Duration = 0
	enc := json.NewEncoder(&js)
	enc.SetIndent("", " ")
	if err := enc.Encode(j); err != nil {
		t.Fatal(err)
	}
	report.WriteSummary(&text, sum, stats)
	d := sum.Duration
	sum.Duration = 0
	if err := report.WriteJUnit(&junit, []report.Campaign{{Spec: sum.Spec.Name, Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	sum.Duration = d
	s := js.String() + junit.String()
	lines := strings.SplitN(text.String(), "\n", 2) // the first line says how long it took
	s2 := lines[1]
	for _, o := range outs {
		s = strings.ReplaceAll(s, o, "OUT")
		s2 = strings.ReplaceAll(s2, o, "OUT")
	}
	return s, s2
}

// TestMergeEqualsOneProcess: shards written and merged give the summary,
// the JSON and JUnit reports and --stats of one process, whatever the
// number of shards.
func TestMergeEqualsOneProcess(t *testing.T) {
	const seed, total = 42, 23
	one := t.TempDir()
	wantJSON, wantText := normalized(t, fakeCampaign(t, one, seed, total, engine.Shard{}), true, one)
	for _, n := range []int{1, 2, 3, 8, 30} {
		dir := t.TempDir()
		writeShards(t, dir, seed, total, n)
		c, err := Merge([]string{dir})
		if err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		var outs []string
		for i := range n {
			outs = append(outs, filepath.Join(dir, DirName(engine.Shard{Index: i, Count: n})))
		}
		gotJSON, gotText := normalized(t, c.Summary, true, outs...)
		if gotJSON != wantJSON || gotText != wantText {
			t.Errorf("%d shards: merged\n%s%s\nwant\n%s%s", n, gotJSON, gotText, wantJSON, wantText)
		}
		if c.Summary.Trials != total || c.History != nil || len(c.Shards) != n {
			t.Errorf("%d shards: %d trials, history %v, %d shards", n, c.Summary.Trials, c.History, len(c.Shards))
		}
		// Real time runs from the first shard's start to the last's end.
		if want := time.Duration(n-1)*time.Second + time.Second; c.Summary.Duration != want {
			t.Errorf("%d shards: duration %v, want %v", n, c.Summary.Duration, want)
		}
	}
}

// TestMergeRefuses: results that are not every shard of one campaign are
// refused in one line naming the file and what differs.
func TestMergeRefuses(t *testing.T) {
	edit := func(t *testing.T, dir string, shard int, n int, f func(r *Result)) {
		t.Helper()
		p := filepath.Join(dir, DirName(engine.Shard{Index: shard, Count: n}), ResultFile)
		r, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		f(r)
		b, _ := json.Marshal(r)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) []string
		want  string
	}{
		{"no results", func(t *testing.T, dir string) []string { return []string{dir} }, "no shard result (shard.json)"},
		{"missing shard", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 4)
			os.RemoveAll(filepath.Join(dir, "shard-2-of-4"))
			return []string{dir}
		}, "3 of 4 shards: missing shard 2"},
		{"twice", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			return []string{dir, filepath.Join(dir, "shard-1-of-2")}
		}, "shard 1/2 twice"},
		{"other seed", func(t *testing.T, dir string) []string {
			writeShards(t, filepath.Join(dir, "a"), 1, 20, 2)
			writeShards(t, filepath.Join(dir, "b"), 2, 20, 2)
			return []string{filepath.Join(dir, "a", "shard-0-of-2"), filepath.Join(dir, "b", "shard-1-of-2")}
		}, "has seed 1, "},
		{"other shard count", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			writeShards(t, dir, 1, 20, 3)
			return []string{dir}
		}, "shard count"},
		{"other strategy", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 1, 2, func(r *Result) { r.Strategy = "pct" })
			return []string{dir}
		}, "has strategy pos, "},
		{"other spec", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 0, 2, func(r *Result) { r.SpecDigest = "0123456789abcdef" })
			return []string{dir}
		}, "has spec digest 0123456789ab, "},
		{"wrong seed", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 1, 2, func(r *Result) { r.Results[2].Seed++ })
			return []string{dir}
		}, "trial 5 has seed"},
		{"foreign trial", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 1, 2, func(r *Result) { r.Results[2].Index = 4 })
			return []string{dir}
		}, "trial 4 is not shard 1/2's"},
		{"short", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 0, 2, func(r *Result) { r.Results = r.Results[:9] })
			return []string{dir}
		}, "9 trials, but shard 0/2 of 20 trials has 10"},
		{"version", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 0, 2, func(r *Result) { r.Version = 9 })
			return []string{dir}
		}, "version 9, want 1"},
		{"not json", func(t *testing.T, dir string) []string {
			os.WriteFile(filepath.Join(dir, ResultFile), []byte("{"), 0o644)
			return []string{dir}
		}, "not a lockstep shard result"},
		{"history missing", func(t *testing.T, dir string) []string {
			writeShards(t, dir, 1, 20, 2)
			edit(t, dir, 0, 2, func(r *Result) { r.History = HistoryFile })
			edit(t, dir, 1, 2, func(r *Result) { r.History = HistoryFile })
			return []string{dir}
		}, "its conflict history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := tc.setup(t, t.TempDir())
			_, err := Merge(dirs)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestMergeInterrupted: a shard stopped by a signal may have fewer trials;
// the merged campaign says it was interrupted.
func TestMergeInterrupted(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir, 1, 20, 2)
	p := filepath.Join(dir, "shard-1-of-2", ResultFile)
	r, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	r.Results, r.Interrupted = r.Results[:4], true
	b, _ := json.Marshal(r)
	os.WriteFile(p, b, 0o644)
	c, err := Merge([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Summary.Interrupted || c.Summary.Trials != 14 {
		t.Fatalf("interrupted %v, %d trials", c.Summary.Interrupted, c.Summary.Trials)
	}
}

// TestMergeHistories: the shards' conflict tables merge into the table
// of all their trials, counted once beside the table they started from.
func TestMergeHistories(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir, 1, 20, 2)
	scheme := conflict.DefaultScheme
	for i, keys := range [][2][]string{{{"a", "b"}, {"c"}}, {{"a", "d"}, {"b"}}} {
		d := filepath.Join(dir, DirName(engine.Shard{Index: i, Count: 2}))
		f := map[string]any{"version": 1, "scheme": scheme.String(), "trials": 5 + 10, "seen": keys[0], "conflicted": keys[1]}
		b, _ := json.Marshal(f)
		os.WriteFile(filepath.Join(d, HistoryFile), b, 0o644)
		p := filepath.Join(d, ResultFile)
		r, _ := Read(p)
		r.History, r.HistoryBase, r.Scheme = HistoryFile, 5, scheme.String()
		b, _ = json.Marshal(r)
		os.WriteFile(p, b, 0o644)
	}
	c, err := Merge([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if seen, confl := c.History.Len(); seen != 4 || confl != 2 || c.History.Trials() != 25 {
		t.Fatalf("merged: %d seen, %d conflicted, %d trials; want 4, 2 (b, c), 25", seen, confl, c.History.Trials())
	}
}
