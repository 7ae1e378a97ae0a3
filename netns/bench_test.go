package netns

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkClusterPerTrial reports the network cost per trial when a
// campaign of 100 trials builds the cluster once, resets it between
// trials and closes it at the end, next to building it fresh each time.
func BenchmarkClusterPerTrial(b *testing.B) {
	for _, n := range []int{3, 10} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			requireNet(b)
			var names []string
			for i := range n {
				names = append(names, fmt.Sprintf("n%d", i+1))
			}
			ctx := context.Background()
			const trials = 100
			var setup, reset, teardown time.Duration
			for range b.N {
				t0 := time.Now()
				c, err := New(ctx, Config{Nodes: names})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				for range trials {
					if err := c.Reset(ctx); err != nil {
						b.Fatal(err)
					}
				}
				t2 := time.Now()
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
				setup += t1.Sub(t0)
				reset += t2.Sub(t1)
				teardown += time.Since(t2)
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
			b.ReportMetric(per(setup), "setup-ms")
			b.ReportMetric(per(teardown), "teardown-ms")
			b.ReportMetric(per(reset)/trials, "reset-ms/trial")
			b.ReportMetric((per(setup)+per(reset)+per(teardown))/trials, "amortized-ms/trial")
			b.ReportMetric(per(setup)+per(teardown), "fresh-ms/trial")
		})
	}
}
