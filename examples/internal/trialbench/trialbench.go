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

// Strategies runs b.N rounds of one campaign of trials per strategy on
// spec, one after the other in each round (so that a machine's drift
// spreads over all), and reports each strategy's trials per minute and
// each one's ratio to the first's: what a strategy costs per trial, its
// prefix replays and corpus included (explore against POS).
func Strategies(b *testing.B, sp *spec.Spec, trials int, names ...string) {
	took := make([]time.Duration, len(names))
	for range b.N {
		for i, name := range names {
			start := time.Now()
			if _, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: trials, Strategy: name, OutDir: b.TempDir()}); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
		}
	}
	for i, name := range names {
		b.ReportMetric(float64(trials*b.N)/took[i].Minutes(), name+"-trials/min")
		if i > 0 {
			b.ReportMetric(took[0].Seconds()/took[i].Seconds(), name+"/"+names[0]+"-rate")
		}
	}
}
