package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/spec"
)

// BenchmarkTrialsPerMinute runs the demo spec with POS and reports trials
// per minute for --jobs 1 and 2.
func BenchmarkTrialsPerMinute(b *testing.B) {
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			skipUnlessTrials(b)
			sp, err := spec.Load(repoPath("testdata", "demo", "demo-fixed.yaml"))
			if err != nil {
				b.Fatal(err)
			}
			const trials = 40
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := Run(context.Background(), sp, RunOptions{Trials: trials, Strategy: "pos", Jobs: jobs, OutDir: b.TempDir()}); err != nil {
					b.Fatal(err)
				}
			}
			perMin := float64(trials*b.N) / time.Since(start).Minutes()
			b.ReportMetric(perMin, "trials/min")
		})
	}
}

// BenchmarkExploreCost: an exploring campaign's trials per minute against
// POS's on the demo's fixed spec (every trial runs to its end), in
// alternating campaigns of 48 trials: what prefix replays, features and the
// corpus cost per trial (issue 43: within 10 %).
func BenchmarkExploreCost(b *testing.B) {
	skipUnlessTrials(b)
	sp, err := spec.Load(repoPath("testdata", "demo", "demo-fixed.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	const trials = 48
	var took [2]time.Duration
	for range b.N {
		for i, name := range []string{"pos", Explore} {
			start := time.Now()
			if _, err := Run(context.Background(), sp, RunOptions{Trials: trials, Strategy: name, OutDir: b.TempDir()}); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
		}
	}
	b.ReportMetric(float64(trials*b.N)/took[0].Minutes(), "pos-trials/min")
	b.ReportMetric(float64(trials*b.N)/took[1].Minutes(), "explore-trials/min")
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "explore/pos-rate")
}

// BenchmarkBulkTransfer runs testdata/specs/bulk.yaml (one connection carrying
// LOCKSTEP_BENCH_BULK_MB MiB, default 100, in 64 KiB writes and reads)
// natively and as one POS trial, and reports both throughputs: over the
// whole trial, and for the trial under lockstep also without starting the
// nodes and tearing them down (the transfer).
func BenchmarkBulkTransfer(b *testing.B) {
	skipUnlessTrials(b)
	sp, err := spec.Load(repoPath("testdata", "specs", "bulk.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	mb := 100
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_BENCH_BULK_MB")); err == nil && n > 0 {
		mb = n
	}
	for i := range sp.Nodes {
		if sp.Nodes[i].Name == "sender" {
			sp.Nodes[i].Command[3] = strconv.Itoa(mb)
		}
	}
	trial := func(native bool) *TrialResult {
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, Native: native, OutDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		r := sum.Results[0]
		if r.Outcome.Kind != Pass {
			b.Fatalf("native %v: %v", native, r.Outcome)
		}
		return r
	}
	mbps := func(d time.Duration) float64 { return float64(mb) / d.Seconds() }
	for range b.N {
		nat := trial(true)
		tr := trial(false)
		transfer := tr.Duration - tr.Launch - tr.Teardown - tr.Reset
		b.ReportMetric(mbps(nat.Duration), "native-MB/s")
		b.ReportMetric(mbps(tr.Duration), "traced-MB/s")
		b.ReportMetric(mbps(transfer), "transfer-MB/s")
		b.ReportMetric(mbps(tr.Duration)/mbps(nat.Duration), "ratio")
		b.ReportMetric(mbps(transfer)/mbps(nat.Duration), "transfer-ratio")
		b.ReportMetric(float64(tr.Launch.Milliseconds()), "start-ms")
		b.ReportMetric(float64(tr.Stats.SettleTime.Milliseconds()), "quiesce-ms")
		b.ReportMetric(float64(tr.Stats.ReleaseTime.Milliseconds()), "release-ms")
		b.ReportMetric(float64(len(tr.Records)), "ops")
		b.ReportMetric(float64(tr.Stats.WindowFull), "window-full")
	}
}
