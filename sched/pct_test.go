package sched

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// step is one op of a simulated thread's program. A send with a conn also
// puts a delivery of the same label on that connection's FIFO queue.
type step struct {
	label string
	kind  Kind
	conn  string
}

// simulate runs threads (LPID → program) to the end under s, releasing one
// op per Next as the engine does: each thread's next op and the oldest
// undelivered message of each connection are enabled. It returns the
// labels in release order, a delivery labelled "d:" + its send's label.
func simulate(t testing.TB, s Strategy, seed int64, threads map[string][]step) []string {
	t.Helper()
	var (
		next   uint64
		total  int
		label  = map[uint64]string{}
		pc     = map[string]int{}
		head   = map[string]*Op{} // LPID → its pending op
		queues = map[string][]*Op{}
	)
	newOp := func(o Op, l string) *Op {
		next++
		o.ID = next
		label[o.ID] = l
		return &o
	}
	issue := func(lpid string) {
		prog := threads[lpid]
		if pc[lpid] >= len(prog) {
			delete(head, lpid)
			return
		}
		st := prog[pc[lpid]]
		pc[lpid]++
		head[lpid] = newOp(Op{LPID: lpid, Node: lpid, Kind: st.kind, Conn: st.conn, Site: st.label}, st.label)
	}
	lpids := make([]string, 0, len(threads))
	for l, prog := range threads {
		lpids = append(lpids, l)
		total += len(prog)
		for _, st := range prog {
			if st.kind == Send && st.conn != "" {
				total++
			}
		}
	}
	slices.Sort(lpids) // ops appearing together are numbered in LPID order
	for _, l := range lpids {
		issue(l)
	}
	s.Reset(seed, total)
	var order []string
	for len(head) > 0 || len(queues) > 0 {
		var en []*Op
		for _, o := range head {
			en = append(en, o)
		}
		for _, q := range queues {
			en = append(en, q[0])
		}
		slices.SortFunc(en, func(a, b *Op) int { return int(a.ID) - int(b.ID) })
		i, err := s.Next(en)
		if err != nil {
			t.Fatal(err)
		}
		o := en[i]
		order = append(order, label[o.ID])
		if o.Kind == Deliver {
			if q := queues[o.Conn][1:]; len(q) > 0 {
				queues[o.Conn] = q
			} else {
				delete(queues, o.Conn)
			}
			continue
		}
		if o.Kind == Send && o.Conn != "" {
			queues[o.Conn] = append(queues[o.Conn], newOp(Op{LPID: o.LPID, Node: o.Node, Kind: Deliver, Conn: o.Conn, Site: o.Site}, "d:"+label[o.ID]))
		}
		issue(o.LPID)
	}
	return order
}

func before(order []string, a, b string) bool {
	i, j := slices.Index(order, a), slices.Index(order, b)
	return i >= 0 && j >= 0 && i < j
}

func TestChain(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Op
		want string
	}{
		{"thread op", Op{LPID: "a/0/t0", Kind: Send, Conn: "x>y"}, "thread:a/0/t0"},
		{"recv", Op{LPID: "b/0/t1", Kind: Recv, Conn: "x>y"}, "thread:b/0/t1"},
		{"delivery by connection", Op{LPID: "a/0/t0", Kind: Deliver, Conn: "10.0.0.1:4000>10.0.0.2:7000"}, "conn:10.0.0.1:4000>10.0.0.2:7000"},
		{"delivery without connection", Op{Node: "a", LPID: "a/0/t0", Kind: Deliver, Object: "inbox:b/0", Peer: "10.0.0.2:7000"}, "deliver:a>inbox:b/0@10.0.0.2:7000"},
		{"advance", Op{LPID: "b/0/t1", Kind: Advance, At: 5}, "advance:b/0/t1"},
		{"fault", Op{Kind: crashKind, Object: "node:b"}, "fault:crash:node:b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.op.Chain(); got != tc.want {
				t.Errorf("Chain() = %q, want %q", got, tc.want)
			}
		})
	}
}

// One single-threaded sender writes m1 on one connection, then m2 on
// another: per-thread PCT always delivered m1 first (both deliveries carry
// the sender's LPID); over chains, both orders must come out at every depth.
// The sender goes on with a few recvs so that a trial has more steps than
// depth 5 has change points.
func TestPCTReordersDeliveriesOfOneSender(t *testing.T) {
	prog := map[string][]step{
		"s": {{"m1", Send, "s>a"}, {"m2", Send, "s>b"}, {"r1", Recv, ""}, {"r2", Recv, ""}, {"r3", Recv, ""}, {"r4", Recv, ""}},
	}
	const n = 3000
	for _, d := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("depth%d", d), func(t *testing.T) {
			late := 0
			for seed := int64(0); seed < n; seed++ {
				o := simulate(t, &PCT{Depth: d}, seed, prog)
				if before(o, "d:m2", "d:m1") {
					late++
				}
			}
			p := float64(late) / n
			t.Logf("P(m2 delivered before m1) = %.3f", p)
			if p < 0.1 || p > 0.9 {
				t.Fatalf("P(m2 delivered before m1) = %.3f, want both orders often", p)
			}
		})
	}
}

// Whatever the priorities and change points, a thread runs its ops in
// program order and a connection delivers in send order.
func TestPCTKeepsChainOrder(t *testing.T) {
	prog := map[string][]step{
		"a": {{"a1", Send, "a>c"}, {"a2", Recv, ""}, {"a3", Send, "a>c"}, {"a4", Send, "a>b"}},
		"b": {{"b1", Send, "b>c"}, {"b2", Send, "b>a"}, {"b3", Poll, ""}},
		"c": {{"c1", Recv, ""}, {"c2", Recv, ""}, {"c3", Send, "c>a"}},
	}
	chains := [][]string{
		{"a1", "a2", "a3", "a4"}, {"b1", "b2", "b3"}, {"c1", "c2", "c3"},
		{"d:a1", "d:a3"},
	}
	for _, d := range []int{1, 3, 10} {
		for seed := int64(0); seed < 500; seed++ {
			o := simulate(t, &PCT{Depth: d}, seed, prog)
			for _, c := range chains {
				for i := 1; i < len(c); i++ {
					if !before(o, c[i-1], c[i]) {
						t.Fatalf("depth %d seed %d: %s ran after %s: %v", d, seed, c[i-1], c[i], o)
					}
				}
			}
		}
	}
}

// Several enabled ops of one chain (deliveries without a connection name,
// advance ops for two deadlines of one thread) run oldest first.
func TestPCTOldestOfChainFirst(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		s := &PCT{Depth: 3}
		s.Reset(seed, 10)
		en := []*Op{
			{ID: 1, LPID: "b/0/t0", Kind: Advance, At: 10},
			{ID: 2, Node: "a", LPID: "a/0/t0", Kind: Deliver, Object: "inbox:b/0", Peer: "10.0.0.2:7000"},
			{ID: 3, LPID: "b/0/t0", Kind: Advance, At: 20},
			{ID: 4, Node: "a", LPID: "a/0/t0", Kind: Deliver, Object: "inbox:b/0", Peer: "10.0.0.2:7000"},
		}
		var got []uint64
		for len(en) > 0 {
			i, err := s.Next(en)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, en[i].ID)
			en = slices.Delete(en, i, i+1)
		}
		if !before(idStrings(got), "1", "3") || !before(idStrings(got), "2", "4") {
			t.Fatalf("seed %d: chain order broken: %v", seed, got)
		}
	}
}

func idStrings(ids []uint64) []string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprint(id))
	}
	return s
}

func TestPCTDeterministic(t *testing.T) {
	prog := map[string][]step{
		"a": {{"a1", Send, "a>c"}, {"a2", Send, "a>b"}, {"a3", Send, "a>c"}},
		"b": {{"b1", Send, "b>c"}, {"b2", Recv, ""}, {"b3", Send, "b>a"}},
		"c": {{"c1", Recv, ""}, {"c2", Send, "c>a"}},
	}
	seen := map[string]bool{}
	for seed := int64(0); seed < 50; seed++ {
		a := strings.Join(simulate(t, &PCT{Depth: 3}, seed, prog), " ")
		s := &PCT{Depth: 3}
		b := strings.Join(simulate(t, s, seed, prog), " ")
		if c := strings.Join(simulate(t, s, seed, prog), " "); a != b || a != c {
			t.Fatalf("seed %d: same seed, different schedules:\n%s\n%s\n%s", seed, a, b, c)
		}
		seen[a] = true
	}
	if len(seen) < 10 {
		t.Fatalf("50 seeds gave only %d schedules", len(seen))
	}
}

// Depth d gives d-1 distinct change points within the hinted steps.
func TestPCTChangePoints(t *testing.T) {
	for _, tc := range []struct{ depth, hint, want int }{
		{1, 100, 0}, {2, 100, 1}, {3, 100, 2}, {5, 4, 4}, {6, 4, 4}, {3, 0, 2},
	} {
		for seed := int64(0); seed < 100; seed++ {
			s := &PCT{Depth: tc.depth}
			s.Reset(seed, tc.hint)
			hint := tc.hint
			if hint == 0 {
				hint = 1000
			}
			if len(s.changes) != tc.want {
				t.Fatalf("depth %d hint %d: %d change points, want %d", tc.depth, tc.hint, len(s.changes), tc.want)
			}
			for c := range s.changes {
				if c < 1 || c > hint {
					t.Fatalf("depth %d hint %d: change point %d out of range", tc.depth, tc.hint, c)
				}
			}
		}
	}
}

// At the change point the chain about to run drops below every chain, also
// below chains that appear afterwards: with two threads of four ops and one
// change point, the first chain is preempted exactly at that step and
// resumes only when the other chain and a late chain have finished.
func TestPCTChangePointDropsChain(t *testing.T) {
	prog := map[string][]step{
		"a": {{"a1", Poll, ""}, {"a2", Poll, ""}, {"a3", Poll, ""}, {"a4", Poll, ""}},
		"b": {{"b1", Poll, ""}, {"b2", Send, "b>x"}, {"b3", Poll, ""}, {"b4", Poll, ""}},
	}
	checked := 0
	for seed := int64(0); seed < 500; seed++ {
		s := &PCT{Depth: 2}
		o := simulate(t, s, seed, prog)
		var c int
		for c = range s.changes {
		}
		if o[0] != "a1" || c < 2 || c > 4 {
			// Checked: a ranks above b (a1 ran first at a step that was
			// not a change point) and the change point falls within a's
			// ops. b's late delivery chain makes the symmetric case
			// different.
			continue
		}
		checked++
		// a1..a(c-1) run, then a drops: b runs to the end, its delivery
		// (a new chain, ranked above the dropped a) goes before a resumes.
		var want []string
		for i := 1; i < c; i++ {
			want = append(want, fmt.Sprintf("a%d", i))
		}
		rest := []string{"b1", "b2", "b3", "b4", "d:b2"}
		for i := c; i <= 4; i++ {
			rest = append(rest, fmt.Sprintf("a%d", i))
		}
		got := strings.Join(o, " ")
		// The delivery may run anywhere after b2 but before a resumes.
		ok := strings.HasPrefix(got, strings.Join(want, " ")) && before(o, "b4", fmt.Sprintf("a%d", c)) &&
			before(o, "d:b2", fmt.Sprintf("a%d", c))
		if !ok {
			t.Fatalf("seed %d: change point at step %d: got %s, want %v then %v", seed, c, got, want, rest)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d of 500 seeds exercised a change point within a's ops", checked)
	}
}

// Advance ops form a chain per deadline owner, apart from the owner's own
// ops. Here a message is in flight to r while r's timer is pending: the
// delivery goes first (r reads it in time) or the advance op does (the
// message is held, r's timeout fires first); PCT must produce both.
func TestPCTWithAdvance(t *testing.T) {
	const n = 3000
	for _, d := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("depth%d", d), func(t *testing.T) {
			timeouts := 0
			for seed := int64(0); seed < n; seed++ {
				s := &PCT{Depth: d}
				s.Reset(seed, 4)
				deliver := &Op{ID: 1, Node: "s", LPID: "s/0/t0", Kind: Deliver, Conn: "s>r", Object: "inbox:r/0"}
				advance := &Op{ID: 2, Node: "r", LPID: "r/0/t0", Kind: Advance, At: 1e9, Delay: 1e9}
				sender := &Op{ID: 3, Node: "s", LPID: "s/0/t0", Kind: Recv}
				en := []*Op{deliver, advance, sender}
				i, err := s.Next(en)
				if err != nil {
					t.Fatal(err)
				}
				if en[i] == advance {
					timeouts++
					// The delivery and the sender's recv are held; r's
					// timed wait returns, a thread op of r's own chain.
					timer := &Op{ID: 4, Node: "r", LPID: "r/0/t0", Kind: Poll}
					if j, _ := s.Next([]*Op{timer}); j != 0 {
						t.Fatal("only op not chosen")
					}
				}
			}
			p := float64(timeouts) / n
			t.Logf("P(advance before delivery) = %.3f", p)
			if p < 0.1 || p > 0.9 {
				t.Fatalf("P(advance before delivery) = %.3f, want both orders often", p)
			}
		})
	}
}
