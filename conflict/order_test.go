package conflict

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// conflictsOf marks the ops that Order.Conflict puts in a conflict with
// another: Analyze must mark the same.
func conflictsOf(recs []sched.Record, o *Order) []bool {
	out := make([]bool, len(recs))
	for a := range recs {
		for b := a + 1; b < len(recs); b++ {
			if o.Conflict(a, b) {
				out[a], out[b] = true, true
			}
		}
	}
	return out
}

// fault appends a fault op of kind on node (its lane is the node's).
func (t *trial) fault(name string, kind sched.Kind, node string) *trial {
	t.op(name, "fault", kind, "node:"+node, "")
	t.recs[len(t.recs)-1].Op.Node = node
	return t
}

// TestHappensBefore: the order explain asks about races is the conflict
// analysis's own (program order, causes, FIFO per connection; a delivery
// not in its sender's program order), and the conflicts it implies are
// the ones Analyze marks.
func TestHappensBefore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		trial  *trial
		before [][2]string // a happens before b
		conc   [][2]string // neither happens before the other
	}{
		{
			name: "send, deliver, recv",
			trial: newTrial().
				op("sa", "a/0/t0", sched.Send, "", "a>s").
				op("pa", "a/0/t0", sched.Poll, "inbox:a", "").
				op("da", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "sa").
				op("rs", "s/0/t0", sched.Recv, "inbox:s", "a>s", "da"),
			before: [][2]string{{"sa", "da"}, {"sa", "rs"}, {"da", "rs"}, {"sa", "pa"}},
			// The sender's next op and its message in flight are
			// concurrent, and so is that op with the recv.
			conc: [][2]string{{"pa", "da"}, {"pa", "rs"}},
		},
		{
			name: "fifo per connection orders deliveries, not their sends",
			trial: newTrial().
				op("s1", "a/0/t0", sched.Send, "", "a>s").
				op("s2", "a/0/t1", sched.Send, "", "a>s").
				op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1").
				op("d2", "a/0/t1", sched.Deliver, "inbox:s", "a>s", "s2"),
			before: [][2]string{{"d1", "d2"}, {"s1", "d2"}},
			conc:   [][2]string{{"s2", "d1"}, {"s1", "s2"}},
		},
		{
			name: "two clients: the deliveries race, each recv follows its own",
			trial: newTrial().
				op("sa", "a/0/t0", sched.Send, "", "a>s").
				op("sb", "b/0/t0", sched.Send, "", "b>s").
				op("da", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "sa").
				op("db", "b/0/t0", sched.Deliver, "inbox:s", "b>s", "sb").
				op("r1", "s/0/t0", sched.Recv, "inbox:s", "a>s", "da").
				op("r2", "s/0/t0", sched.Recv, "inbox:s", "b>s", "db"),
			before: [][2]string{{"da", "r1"}, {"da", "r2"}, {"r1", "r2"}},
			conc:   [][2]string{{"da", "db"}, {"db", "r1"}},
		},
		{
			name: "faults of one node are ordered, of two nodes not",
			trial: newTrial().
				fault("c1", "crash", "x").
				fault("c2", "crash", "y").
				fault("r1", "restart", "x"),
			before: [][2]string{{"c1", "r1"}},
			conc:   [][2]string{{"c1", "c2"}, {"c2", "r1"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.trial.recs
			o := HappensBefore(recs)
			at := func(name string) int { return int(tc.trial.ids[name]) - 1 }
			for _, p := range tc.before {
				if !o.Before(at(p[0]), at(p[1])) || o.Before(at(p[1]), at(p[0])) {
					t.Errorf("%s should happen before %s, and not the other way", p[0], p[1])
				}
			}
			for _, p := range tc.conc {
				if !o.Concurrent(at(p[0]), at(p[1])) {
					t.Errorf("%s and %s should be concurrent", p[0], p[1])
				}
			}
			if got, want := conflictsOf(recs, o), Analyze(recs, DefaultScheme).Conflicting; !slices.Equal(got, want) {
				t.Errorf("conflicts by Order %v, Analyze marks %v", got, want)
			}
		})
	}
}

// TestOrderAgreesWithAnalyze: on a larger run, random but well formed
// (connections with sends delivered in order and read, polls, threads of
// one process), the conflicts Order implies are Analyze's.
func TestOrderAgreesWithAnalyze(t *testing.T) {
	for seed := 0; seed < 20; seed++ {
		recs := randomRun(seed, 200)
		o := HappensBefore(recs)
		got, want := conflictsOf(recs, o), Analyze(recs, DefaultScheme).Conflicting
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: Order and Analyze disagree on the conflicts", seed)
		}
		if n := count(got); n == 0 || n == len(got) {
			t.Fatalf("seed %d: %d of %d ops in conflicts: the run checks nothing", seed, n, len(got))
		}
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// randomRun makes n records of three nodes with two threads each that
// send on connections to each other, the sends delivered in order and
// read by the receiver, with polls between.
func randomRun(seed, n int) []sched.Record {
	r := uint64(seed)*2654435761 + 1
	next := func(k int) int {
		r ^= r << 13
		r ^= r >> 7
		r ^= r << 17
		return int(r % uint64(k))
	}
	type flight struct {
		conn string
		id   uint64
	}
	var recs []sched.Record
	var sent, delivered []flight
	add := func(op sched.Op, causes ...uint64) {
		op.ID = uint64(len(recs) + 1)
		recs = append(recs, sched.Record{Step: len(recs) + 1, Op: op, Causes: causes})
	}
	nodes := []string{"a", "b", "c"}
	for len(recs) < n {
		src, dst := nodes[next(3)], nodes[next(3)]
		lpid := fmt.Sprintf("%s/0/t%d", src, next(2))
		switch k := next(4); {
		case k == 0 && src != dst:
			conn := src + ">" + dst
			add(sched.Op{LPID: lpid, Node: src, Kind: sched.Send, Conn: conn})
			sent = append(sent, flight{conn, uint64(len(recs))})
		case k == 1 && len(sent) > 0:
			// The oldest send of a connection is delivered first.
			f := sent[0]
			for i, s := range sent {
				if s.conn == sent[len(sent)-1].conn {
					f = s
					sent = slices.Delete(sent, i, i+1)
					break
				}
			}
			to := f.conn[len(f.conn)-1:]
			add(sched.Op{LPID: recs[f.id-1].Op.LPID, Node: f.conn[:1], Kind: sched.Deliver, Object: "inbox:" + to, Conn: f.conn}, f.id)
			delivered = append(delivered, flight{f.conn, uint64(len(recs))})
		case k == 2 && len(delivered) > 0:
			f := delivered[0]
			delivered = delivered[1:]
			to := f.conn[len(f.conn)-1:]
			add(sched.Op{LPID: to + "/0/t0", Node: to, Kind: sched.Recv, Object: "inbox:" + to, Conn: f.conn}, f.id)
		default:
			add(sched.Op{LPID: lpid, Node: src, Kind: sched.Poll, Object: "inbox:" + src})
		}
	}
	return recs
}
