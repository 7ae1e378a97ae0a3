package conflict

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// synthetic builds an n-op trace over 10 nodes of 2 threads each: threads
// send to random nodes, every send is delivered later and consumed by a
// recv of the receiving node, with polls in between.
func synthetic(n int) []sched.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	const nodes = 10
	recs := make([]sched.Record, 0, n)
	type inflight struct {
		send uint64
		conn string
		to   int
	}
	var pending []inflight
	var delivered [nodes][]uint64
	id := uint64(0)
	add := func(op sched.Op, causes ...uint64) uint64 {
		id++
		op.ID = id
		op.Site = fmt.Sprintf("prog+%#x", len(op.Kind)*16+rng.IntN(4))
		recs = append(recs, sched.Record{Step: len(recs) + 1, Op: op, Causes: causes})
		return id
	}
	for len(recs) < n {
		from := rng.IntN(nodes)
		lp := fmt.Sprintf("n%d/0/t%d", from, rng.IntN(2))
		switch k := rng.IntN(4); {
		case k == 0:
			to := (from + 1 + rng.IntN(nodes-1)) % nodes
			conn := fmt.Sprintf("n%d>n%d", from, to)
			s := add(sched.Op{LPID: lp, Kind: sched.Send, Conn: conn})
			pending = append(pending, inflight{s, conn, to})
		case k == 1 && len(pending) > 0:
			i := rng.IntN(len(pending))
			f := pending[i]
			pending = append(pending[:i], pending[i+1:]...)
			d := add(sched.Op{LPID: lp, Kind: sched.Deliver, Conn: f.conn, Object: fmt.Sprintf("inbox:n%d", f.to)}, f.send)
			delivered[f.to] = append(delivered[f.to], d)
		case k == 2 && len(delivered[from]) > 0:
			add(sched.Op{LPID: lp, Kind: sched.Recv, Object: fmt.Sprintf("inbox:n%d", from)}, delivered[from]...)
			delivered[from] = nil
		default:
			add(sched.Op{LPID: lp, Kind: sched.Poll, Object: fmt.Sprintf("inbox:n%d", from)})
		}
	}
	return recs
}

// BenchmarkAnalyzeMillion: conflict analysis of a 1,000,000-op trace of
// 10 nodes (target: under 2 s here).
func BenchmarkAnalyzeMillion(b *testing.B) {
	recs := synthetic(1_000_000)
	b.ResetTimer()
	var a *Analysis
	for range b.N {
		a = Analyze(recs, DefaultScheme)
	}
	b.StopTimer()
	s := a.Stats()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/trace")
	b.ReportMetric(float64(s.Conflicting), "conflicting-ops")
}

// BenchmarkRacesMillion: Races over the same million ops, against
// Analyze's pass alone (an exploring campaign names each counted trial's
// races).
func BenchmarkRacesMillion(b *testing.B) {
	recs := synthetic(1_000_000)
	b.ResetTimer()
	n := 0
	for range b.N {
		n = len(Races(recs))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/trace")
	b.ReportMetric(float64(n), "races")
}
