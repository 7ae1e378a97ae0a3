package engine

import (
	"context"
	"fmt"
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
