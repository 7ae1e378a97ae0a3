// Package trialbench runs one trial of a real-target example natively and
// one under lockstep, for the examples' benchmarks (issue: performance on
// real targets), and reports them as ratios.
package trialbench

import (
	"context"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/spec"
)

// Run does b.N native/lockstep pairs of spec's first trial, which must pass
// both ways, and reports the times, their ratio, the stops, the clock reads
// that still stopped (direct syscalls), the share of lockstep's time spent
// waiting for quiescence, and that share without the nodes' own CPU time.
func Run(b *testing.B, sp *spec.Spec) {
	for range b.N {
		native, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: 1, OutDir: b.TempDir(), Native: true, NativeLimit: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		traced, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: 1, OutDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		n, r := native.Results[0], traced.Results[0]
		if n.Outcome.Kind != engine.Pass || r.Outcome.Kind != engine.Pass {
			b.Fatalf("native %v, lockstep %v", n.Outcome, r.Outcome)
		}
		b.ReportMetric(n.Duration.Seconds(), "native-s")
		b.ReportMetric(r.Duration.Seconds(), "lockstep-s")
		b.ReportMetric(r.Duration.Seconds()/n.Duration.Seconds(), "ratio")
		b.ReportMetric(float64(r.Stats.Stops), "stops")
		b.ReportMetric(float64(r.Stats.ClockReads), "clock-read-stops")
		b.ReportMetric(r.Stats.SettleTime.Seconds()/r.Duration.Seconds(), "quiescence-share")
		// The nodes run inside the wait for quiescence (one CPU): what is
		// left of it is lockstep's own waiting and checking.
		b.ReportMetric(r.NodesCPU.Seconds(), "nodes-cpu-s")
		b.ReportMetric((r.Stats.SettleTime-r.NodesCPU).Seconds()/r.Duration.Seconds(), "own-quiescence-share")
	}
}
