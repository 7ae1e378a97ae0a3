package shard

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

func TestMain(m *testing.M) {
	// The campaigns' zygotes re-execute this binary.
	tracer.MaybeRunZygote()
	testutil.LeakCheckMain(m)
}

// demo loads the bundled demo, skipping when trials cannot run here.
func demo(t *testing.T) *spec.Spec {
	t.Helper()
	testutil.RequireDemo(t)
	sp, err := spec.Load(testutil.RepoPath("testdata", "demo", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// runShards runs a campaign as n shards into dir and merges them.
func runShards(t *testing.T, sp *spec.Spec, opts engine.RunOptions, dir string, n int) *Campaign {
	t.Helper()
	for i := range n {
		o := opts
		o.Shard = engine.Shard{Index: i, Count: n}
		o.OutDir = filepath.Join(dir, DirName(o.Shard))
		start := time.Now()
		sum, err := engine.Run(context.Background(), sp, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(o.OutDir, sum, start); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Merge([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sameTrials fails unless two campaigns ran the same trials: index, seed,
// outcome and the trace, op for op.
func sameTrials(t *testing.T, got, want *engine.Summary) {
	t.Helper()
	if len(got.Results) != len(want.Results) {
		t.Fatalf("%d trials, want %d", len(got.Results), len(want.Results))
	}
	for k, w := range want.Results {
		g := got.Results[k]
		if g.Index != w.Index || g.Seed != w.Seed || g.Outcome != w.Outcome {
			t.Errorf("trial %d seed %d: %v; one process: trial %d seed %d: %v", g.Index, g.Seed, g.Outcome, w.Index, w.Seed, w.Outcome)
			continue
		}
		gt, err1 := os.ReadFile(g.TracePath)
		wt, err2 := os.ReadFile(w.TracePath)
		if err1 != nil || err2 != nil || !bytes.Equal(gt, wt) {
			t.Errorf("trial %d: traces %s and %s differ (%v, %v)", w.Index, g.TracePath, w.TracePath, err1, err2)
		}
	}
}

// TestShardedCampaignEqualsOneProcess: three shards of a campaign, run
// apart and merged, ran the trials one process runs, trace for trace, and
// report the same (PCT too, whose step hint is trial 0's, which only
// shard 0 owns).
func TestShardedCampaignEqualsOneProcess(t *testing.T) {
	sp := demo(t)
	seed := int64(1)
	for _, strategy := range []string{"pos", "pct", "random"} {
		t.Run(strategy, func(t *testing.T) {
			opts := engine.RunOptions{Trials: 20, Strategy: strategy, Seed: &seed, TraceAll: true}
			one := opts
			one.OutDir = t.TempDir()
			want, err := engine.Run(context.Background(), sp, one)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			c := runShards(t, sp, opts, dir, 3)
			sameTrials(t, c.Summary, want)
			var outs []string
			for i := range 3 {
				outs = append(outs, filepath.Join(dir, DirName(engine.Shard{Index: i, Count: 3})))
			}
			gotJSON, gotText := normalized(t, c.Summary, false, outs...)
			wantJSON, wantText := normalized(t, want, false, one.OutDir)
			if gotJSON != wantJSON || gotText != wantText {
				t.Errorf("merged reports\n%s%s\none process's\n%s%s", gotJSON, gotText, wantJSON, wantText)
			}
			t.Logf("%s: %d trials, %d failures, alike", strategy, want.Trials, want.Failures)
		})
	}
}

// TestShardedPlusHistory: a "+" strategy's shard learns from its own
// trials only: as the one shard of a campaign it is the campaign; as one
// of three it is the same whatever --jobs; and the merged conflict table
// is the one learned from every trial the shards ran.
func TestShardedPlusHistory(t *testing.T) {
	sp := demo(t)
	// The table is rebuilt below from the traces, which do not keep the
	// messages' bytes a "+msg" key names: compare under "+kind". They do
	// keep the counts a "+nth" key names (sched.Op.Nth).
	sp.Scheduler.Conflict.Scheme = "proc+pc+kind+peer+nth"
	seed := int64(1)
	opts := engine.RunOptions{Trials: 18, Strategy: "pos+", Seed: &seed, TraceAll: true}
	one := opts
	one.OutDir = t.TempDir()
	want, err := engine.Run(context.Background(), sp, one)
	if err != nil {
		t.Fatal(err)
	}
	c1 := runShards(t, sp, opts, t.TempDir(), 1)
	sameTrials(t, c1.Summary, want)

	dir := t.TempDir()
	c3 := runShards(t, sp, opts, dir, 3)
	// Shard 1 again, two trials at a time.
	again := opts
	again.Jobs, again.Shard, again.OutDir = 2, engine.Shard{Index: 1, Count: 3}, t.TempDir()
	s1, err := engine.Run(context.Background(), sp, again)
	if err != nil {
		t.Fatal(err)
	}
	var shard1 engine.Summary
	for _, r := range c3.Summary.Results {
		if r.Index%3 == 1 {
			shard1.Results = append(shard1.Results, r)
		}
	}
	sameTrials(t, s1, &shard1)

	scheme, _ := conflict.ParseScheme(sp.Scheduler.Conflict.Scheme)
	learned := conflict.NewHistory(scheme)
	for _, r := range c3.Summary.Results {
		tr, err := engine.LoadTrace(r.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		learned.Update(conflict.Analyze(tr.Records, scheme))
	}
	a, b := filepath.Join(t.TempDir(), "merged.json"), filepath.Join(t.TempDir(), "learned.json")
	if err := c3.History.Save(a); err != nil {
		t.Fatal(err)
	}
	if err := learned.Save(b); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Errorf("merged history\n%s\nthe trials' own\n%s", ab, bb)
	}
	if seen, _ := c3.History.Len(); seen == 0 || c3.History.Trials() != 18 || len(c3.Summary.Stats) != 18 {
		t.Errorf("merged history: %d signatures, %d trials, %d stats", seen, c3.History.Trials(), len(c3.Summary.Stats))
	}
}
