package sched

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// twoThreads simulates threads A and B with k ops each; at every step the
// enabled set is the next op of each thread that has ops left. It returns
// the release order as "A1 B1 A2 ...".
func twoThreads(s Strategy, seed int64, k int) []string {
	s.Reset(seed, 2*k)
	var next uint64
	mk := func(th string, i int) *Op {
		next++
		return &Op{ID: next, LPID: th, Kind: Send, Object: "inbox:x", Site: fmt.Sprintf("%s%d", th, i)}
	}
	a, b := 1, 1
	pa, pb := mk("A", 1), mk("B", 1)
	var order []string
	for pa != nil || pb != nil {
		var en []*Op
		if pa != nil {
			en = append(en, pa)
		}
		if pb != nil {
			en = append(en, pb)
		}
		if len(en) == 2 && en[0].ID > en[1].ID {
			en[0], en[1] = en[1], en[0]
		}
		i, err := s.Next(en)
		if err != nil {
			panic(err)
		}
		o := en[i]
		order = append(order, o.Site)
		if o.LPID == "A" {
			if a++; a <= k {
				pa = mk("A", a)
			} else {
				pa = nil
			}
		} else {
			if b++; b <= k {
				pb = mk("B", b)
			} else {
				pb = nil
			}
		}
	}
	return order
}

func index(order []string, s string) int {
	for i, o := range order {
		if o == s {
			return i
		}
	}
	return -1
}

func TestDistributions(t *testing.T) {
	const k, n = 3, 20000
	for _, tc := range []struct {
		name string
		make func() Strategy
		// probability that A1 runs before B1, and that B1 runs after all of A
		first, late float64
	}{
		{"random", func() Strategy { return &Random{} }, 0.5, math.Pow(0.5, k)},
		{"pos", func() Strategy { return &POS{} }, 0.5, 1.0 / (k + 1)},
		{"pct-depth1", func() Strategy { return &PCT{Depth: 1} }, 0.5, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.make()
			first, late := 0, 0
			for seed := int64(0); seed < n; seed++ {
				o := twoThreads(s, seed, k)
				if index(o, "A1") < index(o, "B1") {
					first++
				}
				if index(o, "B1") > index(o, fmt.Sprintf("A%d", k)) {
					late++
				}
			}
			pf, pl := float64(first)/n, float64(late)/n
			t.Logf("P(A1 before B1)=%.4f (want %.4f), P(B1 after A1..A%d)=%.4f (want %.4f)", pf, tc.first, k, pl, tc.late)
			if math.Abs(pf-tc.first) > 0.02 || math.Abs(pl-tc.late) > 0.02 {
				t.Fatalf("distribution off")
			}
		})
	}
}

// PCT with depth 2 has one change point: with a 2-thread, 2-op program a
// depth-2 ordering (A1 B1 A2) must be hit with probability >= 1/(n*k) = 1/8.
func TestPCTDepthTwo(t *testing.T) {
	const n = 20000
	hits := 0
	for seed := int64(0); seed < n; seed++ {
		o := twoThreads(&PCT{Depth: 2}, seed, 2)
		if strings.Join(o, " ") == "A1 B1 A2 B2" || strings.Join(o, " ") == "A1 B1 B2 A2" {
			hits++
		}
	}
	if p := float64(hits) / n; p < 1.0/8 {
		t.Fatalf("P(A1 then B1 preempting A) = %.4f < 1/8", p)
	}
}

func TestDeterminism(t *testing.T) {
	for _, name := range []string{"random", "pct", "pos", "pos*"} {
		s1, _ := New(name, Params{})
		s2, _ := New(name, Params{})
		a, b := twoThreads(s1, 42, 5), twoThreads(s2, 42, 5)
		if strings.Join(a, " ") != strings.Join(b, " ") {
			t.Errorf("%s: same seed, different schedules: %v vs %v", name, a, b)
		}
		differs := false
		for seed := int64(1); seed < 20 && !differs; seed++ {
			differs = strings.Join(twoThreads(s1, seed, 5), " ") != strings.Join(a, " ")
		}
		if !differs {
			t.Errorf("%s: every seed gives the same schedule", name)
		}
	}
	if _, err := New("bogus", Params{}); err == nil || !strings.Contains(err.Error(), `unknown strategy "bogus"`) {
		t.Errorf("bad name: %v", err)
	}
}

// POS* redraws only the priorities of pending ops that race with the
// released one (same Object).
func TestPOSStarRedrawsRacingOnly(t *testing.T) {
	s := &POS{Redraw: true}
	s.Reset(7, 0)
	ops := []*Op{{ID: 1, Object: "inbox:a"}, {ID: 2, Object: "inbox:a"}, {ID: 3, Object: "inbox:b"}}
	s.Next(ops) // assigns all priorities and releases the highest
	before := map[uint64]float64{}
	for id, p := range s.prio {
		before[id] = p
	}
	released := uint64(0)
	for _, o := range ops {
		if _, ok := s.prio[o.ID]; !ok {
			released = o.ID
		}
	}
	// Run the redraw logic again by releasing one more op.
	var left []*Op
	for _, o := range ops {
		if o.ID != released {
			left = append(left, o)
		}
	}
	if released == 3 {
		// b released: a's priorities untouched.
		if before[1] != s.prio[1] || before[2] != s.prio[2] {
			t.Fatal("ops on another object were redrawn")
		}
		return
	}
	// an a-op released: the other a-op was redrawn, the b-op was not.
	other := uint64(3 - released)
	if _, ok := before[other]; !ok {
		t.Fatal("missing priority")
	}
	if before[3] != s.prio[3] {
		t.Fatal("op on another object redrawn")
	}
	_ = left
}

type setPredictor map[string]bool // signatures that never conflicted

func (p setPredictor) MayConflict(s Signature) bool { return !p[s.String()] }

func TestPlusReleasesPredictedSafeAtOnce(t *testing.T) {
	pred := setPredictor{"B@b": true}
	s, err := New("pos+", Params{Predictor: pred})
	if err != nil {
		t.Fatal(err)
	}
	s.Reset(1, 0)
	en := []*Op{{ID: 1, LPID: "A", Site: "a"}, {ID: 2, LPID: "B", Site: "b"}, {ID: 3, LPID: "C", Site: "b"}}
	i, _ := s.Next(en)
	if en[i].ID != 2 || !s.(*Plus).LastImmediate() {
		t.Fatalf("want op 2 released at once, got %v (immediate %v)", en[i], s.(*Plus).LastImmediate())
	}
	i, _ = s.Next([]*Op{{ID: 1, LPID: "A", Site: "a"}, {ID: 3, LPID: "C", Site: "b"}})
	if s.(*Plus).LastImmediate() {
		t.Fatal("possibly conflicting ops went through the fast path")
	}
	if s.Name() != "pos+" {
		t.Fatal(s.Name())
	}
	// A fault or a delay on offer races with every op: beside one, an op
	// goes through the fast path only where POS ranks it above the fault
	// or the delay, and under POS* (whose ranks change) never.
	for _, other := range []*Op{{ID: 9, LPID: "fault", Kind: "crash", Object: "node:x"}, {ID: 10, LPID: "A", Kind: Advance}} {
		var at, not int
		for seed := int64(1); seed <= 40; seed++ {
			en := []*Op{{ID: 2, LPID: "B", Site: "b"}, other}
			twin := &POS{}
			twin.Reset(seed, 0)
			above := twin.Rank(en[0]) > twin.Rank(en[1])
			s.Reset(seed, 0)
			i, _ := s.Next(en)
			imm := s.(*Plus).LastImmediate()
			if imm != above || (imm && i != 0) {
				t.Errorf("seed %d beside %v: released %v at once %v, ranked above %v", seed, other, en[i], imm, above)
			}
			if imm {
				at++
			} else {
				not++
			}
			star, _ := New("pos*+", Params{Predictor: pred})
			star.Reset(seed, 0)
			star.Next([]*Op{{ID: 2, LPID: "B", Site: "b"}, other})
			if star.(*Plus).LastImmediate() {
				t.Errorf("pos*+ released an op at once beside %v", other)
			}
		}
		if at == 0 || not == 0 {
			t.Errorf("beside %v: %d seeds at once, %d not: both must occur", other, at, not)
		}
	}
}

// countPredictor keys signatures by their count too (a "+nth" scheme):
// the ops in safe never conflicted.
type countPredictor map[string]bool

func (p countPredictor) MayConflict(s Signature) bool {
	return !p[fmt.Sprintf("%s#%d", s, s.Nth)]
}
func (countPredictor) Counts() bool                { return true }
func (countPredictor) CountKey(s Signature) string { return s.String() }

// TestPlusNumbersOps: under a scheme that counts, Plus numbers each op
// the first time it is offered, among the ops of its count key, keeps
// the number while the op waits (and on the op, for its record), and
// starts again with each trial; the first B may conflict, later ones not.
func TestPlusNumbersOps(t *testing.T) {
	pred := countPredictor{"B@b#1": true, "B@b#2": true}
	s, err := New("pos+", Params{Predictor: pred})
	if err != nil {
		t.Fatal(err)
	}
	for trial := int64(1); trial <= 2; trial++ {
		s.Reset(trial, 0)
		b1, a := &Op{ID: 1, LPID: "B", Site: "b"}, &Op{ID: 2, LPID: "A", Site: "a"}
		i, _ := s.Next([]*Op{b1, a})
		if s.(*Plus).LastImmediate() {
			t.Fatalf("trial %d: the first B (may conflict) released at once", trial)
		}
		if b1.Nth != 0 || a.Nth != 0 {
			t.Fatalf("trial %d: first ops numbered %d and %d", trial, b1.Nth, a.Nth)
		}
		left := []*Op{b1, a}
		left = append(left[:i], left[i+1:]...)
		b2 := &Op{ID: 3, LPID: "B", Site: "b"}
		again := &Op{ID: left[0].ID, LPID: left[0].LPID, Site: left[0].Site} // offered anew
		i, _ = s.Next([]*Op{again, b2})
		if again.Nth != 0 || b2.Nth != 1 {
			t.Fatalf("trial %d: numbered %d (seen before) and %d (the second B)", trial, again.Nth, b2.Nth)
		}
		if !s.(*Plus).LastImmediate() || i != 1 {
			t.Fatalf("trial %d: the second B (never conflicted) not released at once: %d", trial, i)
		}
	}
}

// TestPlusKeepsFaultsPlace: ops that never conflict, released at once
// beside a fault, leave the fault where POS puts it: after the same ops.
func TestPlusKeepsFaultsPlace(t *testing.T) {
	pred := setPredictor{"B@b": true}
	released := func(s Strategy, seed int64) (before []uint64, immediate int) {
		s.Reset(seed, 0)
		en := []*Op{{ID: 1, LPID: "fault", Kind: "crash", Object: "node:x"}}
		for id := uint64(2); id < 10; id++ {
			en = append(en, &Op{ID: id, LPID: "B", Site: "b"})
		}
		for len(en) > 0 {
			i, err := s.Next(en)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := s.(*Plus); ok && p.LastImmediate() {
				immediate++
			}
			if en[i].ID == 1 {
				return before, immediate
			}
			before = append(before, en[i].ID)
			en = slices.Delete(en, i, i+1)
		}
		t.Fatal("the fault never ran")
		return nil, 0
	}
	var total int
	for seed := int64(1); seed <= 30; seed++ {
		pos, _ := New("pos", Params{})
		plus, _ := New("pos+", Params{Predictor: pred})
		want, _ := released(pos, seed)
		got, imm := released(plus, seed)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("seed %d: before the fault POS+ released %v, POS %v", seed, got, want)
		}
		total += imm
	}
	if total == 0 {
		t.Error("no op released at once in 30 seeds")
	}
}

func TestReplay(t *testing.T) {
	rec := &Trace{}
	s := &POS{}
	order := twoThreads(s, 3, 3)
	// Record the ops as a trace and replay them through the same driver.
	var next uint64
	for _, site := range order {
		next++
		rec.Records = append(rec.Records, Record{Step: int(next), Op: Op{LPID: site[:1], Kind: Send, Object: "inbox:x", Site: site}})
	}
	got := twoThreads(NewReplay(rec, nil, testFaults), 0, 3)
	if strings.Join(got, " ") != strings.Join(order, " ") {
		t.Fatalf("replay %v, recorded %v", got, order)
	}
	// A divergence names the step and both ops.
	rec.Records[0].Op.Object = "inbox:y"
	r := NewReplay(rec, nil, testFaults)
	r.Reset(0, 0)
	_, err := r.Next([]*Op{{ID: 1, LPID: "A", Kind: Send, Object: "inbox:x", Site: "A1"}})
	if err == nil || !strings.HasPrefix(err.Error(), "diverged at step 1: expected ") || !strings.Contains(err.Error(), ", got #1 A send") {
		t.Fatalf("divergence error: %v", err)
	}
}

func TestTraceRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewTraceWriter(&buf)
	w.WriteHeader(Header{Version: "x", Seed: 9, Strategy: "pos"})
	w.WriteRecord(Record{Step: 1, VTime: 5, Op: Op{ID: 1, LPID: "n/0/t0", Kind: Deliver, Bytes: 3}, Causes: []uint64{7}})
	w.WriteOutcome(Outcome{Kind: "deadlock", Steps: 1})
	w.Flush()
	tr, err := ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Seed != 9 || len(tr.Records) != 1 || tr.Records[0].Op.Kind != Deliver || tr.Records[0].Causes[0] != 7 || tr.Outcome.Kind != "deadlock" {
		t.Fatalf("round trip: %+v", tr)
	}
	if _, err := ReadTrace(strings.NewReader("{\"header\":{}}\n{bad\n")); err == nil || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Fatalf("bad line error: %v", err)
	}
	if _, err := ReadTrace(strings.NewReader("name: a spec\nnodes: []\n")); err == nil || !strings.HasPrefix(err.Error(), "line 1: not a lockstep trace") {
		t.Fatalf("a spec read as a trace: %v", err)
	}
	if !strings.Contains(FormatRecord(tr.Records[0]), "n/0/t0") {
		t.Fatal(FormatRecord(tr.Records[0]))
	}
}

func BenchmarkNext(b *testing.B) {
	for _, name := range []string{"random", "pct", "pos", "pos*"} {
		for _, n := range []int{10, 100} {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				s, _ := New(name, Params{})
				s.Reset(1, 1000)
				en := make([]*Op, n)
				for i := range en {
					en[i] = &Op{ID: uint64(i + 1), LPID: fmt.Sprintf("t%d", i%4), Object: fmt.Sprintf("o%d", i%3)}
				}
				next := uint64(n)
				for i := 0; i < b.N; i++ {
					j, _ := s.Next(en)
					next++
					en[j] = &Op{ID: next, LPID: en[j].LPID, Object: en[j].Object}
				}
			})
		}
	}
}

// Replay finds the recorded op on another thread of the same process when
// the recorded thread is busy with something else, and nowhere else.
func TestReplayAcrossThreads(t *testing.T) {
	rec := Op{ID: 7, LPID: "client/0.1/t2", Kind: Connect, Object: "listen:10.77.0.3:2379", Site: "client+0x10", Syscall: "connect"}
	tr := &Trace{Records: []Record{{Op: rec}}}
	tests := []struct {
		name    string
		enabled []*Op
		want    int // index, -1 for divergence
		moved   int
	}{
		{"same thread", []*Op{{ID: 7, LPID: "client/0.1/t2", Kind: Connect, Object: rec.Object, Site: rec.Site, Syscall: "connect"}}, 0, 0},
		{"other thread", []*Op{
			{ID: 6, LPID: "client/0.1/t2", Kind: Sleep, Syscall: "nanosleep"},
			{ID: 7, LPID: "client/0.1/t4", Kind: Connect, Object: rec.Object, Site: rec.Site, Syscall: "connect"},
		}, 1, 1},
		{"other process", []*Op{{ID: 7, LPID: "client/0.2/t2", Kind: Connect, Object: rec.Object, Site: rec.Site, Syscall: "connect"}}, -1, 0},
		{"other object", []*Op{{ID: 7, LPID: "client/0.1/t4", Kind: Connect, Object: "listen:10.77.0.4:2379", Site: rec.Site, Syscall: "connect"}}, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReplay(tr, nil, testFaults)
			r.Reset(1, 0)
			if replayNext(t, r, tt.enabled, tt.want) && r.Moved != tt.moved {
				t.Fatalf("moved %d, want %d", r.Moved, tt.moved)
			}
		})
	}
}

// replayOf is a replay, reset, of a trace of ops.
func replayOf(ops ...Op) *Replay {
	tr := &Trace{}
	for _, o := range ops {
		tr.Records = append(tr.Records, Record{Op: o})
	}
	r := NewReplay(tr, nil, testFaults)
	r.Reset(1, 0)
	return r
}

// replayNext has r release its next recorded op among enabled and checks
// that it is enabled[want] or, with want < 0, that the replay parts. It
// reports whether an op was released.
func replayNext(t *testing.T, r *Replay, enabled []*Op, want int) bool {
	t.Helper()
	i, err := r.Next(enabled)
	if want < 0 {
		if err == nil {
			t.Fatalf("released %v, want the replay to part", enabled[i])
		}
		return false
	}
	if err != nil || i != want {
		t.Fatalf("released %d (%v), want %d", i, err, want)
	}
	return true
}

// After the trace's last decision a replay with a tail releases the lowest
// ID first, up to its bound, then says the trial went on without its outcome.
func TestReplayTail(t *testing.T) {
	rec := &Trace{Records: []Record{{Step: 1, Op: Op{ID: 1, LPID: "A", Kind: Send, Object: "inbox:x", Site: "A1"}}}}
	tail := NewReplayTail(2)
	r := NewReplay(rec, tail, testFaults)
	r.Reset(0, 0)
	a := &Op{ID: 1, LPID: "A", Kind: Send, Object: "inbox:x", Site: "A1"}
	if i, err := r.Next([]*Op{a}); err != nil || i != 0 || !r.Done() {
		t.Fatalf("recorded step: %d %v, done %v", i, err, r.Done())
	}
	exit := []*Op{{ID: 5, LPID: "B", Kind: Close}, {ID: 7, LPID: "A", Kind: Sleep}}
	for k := 0; k < 2; k++ {
		if i, err := r.Next(exit); err != nil || i != 0 {
			t.Fatalf("tail op %d: %d %v", k, i, err)
		}
	}
	if _, err := r.Next(exit); err == nil || !strings.Contains(err.Error(), "went on 2 ops past the trace") {
		t.Fatalf("past the bound: %v", err)
	}
	if tail.Len() != 2 {
		t.Fatalf("tail length %d", tail.Len())
	}
}

func TestReplayReady(t *testing.T) {
	a := Op{ID: 1, LPID: "n/0/t0", Kind: Send, Site: "x+0x1"}
	b := Op{ID: 2, LPID: "n/0/t1", Kind: Recv, Site: "x+0x2"}
	moved := b
	moved.ID, moved.LPID = 7, "n/0/t3" // the same recv on another thread
	other := Op{ID: 3, LPID: "m/0/t0", Kind: Recv, Site: "y+0x1"}
	tr := &Trace{Records: []Record{{Op: a}, {Op: Op{ID: 9, Kind: crashKind}, Auto: true}, {Op: b}}}
	r := NewReplay(tr, nil, testFaults)
	for _, tc := range []struct {
		name    string
		enabled []*Op
		want    bool
		next    bool // make the decision afterwards
	}{
		{"missing", []*Op{&other}, false, false},
		{"present", []*Op{&other, &a}, true, true},
		{"after an auto record, on another thread", []*Op{&moved}, true, true},
		{"records done", nil, true, false},
	} {
		if got := r.Ready(tc.enabled); got != tc.want {
			t.Fatalf("%s: Ready = %v, want %v", tc.name, got, tc.want)
		}
		if tc.next {
			if _, err := r.Next(tc.enabled); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
	}
}

// A replay prefers the recorded op on its recorded connection, on another
// thread of the process, to the op of the recorded thread on another
// connection: where two of a JVM's threads were named the other way round,
// the thread of the recorded name sends to the same peer address on the
// other connection, and taking it sent the bytes down the wrong one
// (ZooKeeper's quorum connections, docs/results.md).
func TestReplayPrefersConnection(t *testing.T) {
	rec := Op{ID: 9, LPID: "zk2/0/t29", Kind: Send, Site: "libnio.so+0x72eb", Peer: "10.77.0.1:3888", Conn: "10.77.0.2:32770>10.77.0.1:3888", Bytes: 176, Syscall: "write"}
	tr := &Trace{Records: []Record{{Op: rec}}}
	named := rec
	named.Conn = "10.77.0.2:32769>10.77.0.1:3888"
	other := rec
	other.LPID, other.ID = "zk2/0/t31", 11
	for _, tt := range []struct {
		name    string
		enabled []*Op
		want    int
		moved   int
	}{
		{"recorded connection on another thread", []*Op{&named, &other}, 1, 1},
		{"recorded thread and connection", []*Op{&other, &rec}, 1, 0},
		{"only the recorded name", []*Op{&named}, 0, 0},
		{"no connection known", []*Op{{ID: 9, LPID: rec.LPID, Kind: Send, Site: rec.Site, Peer: rec.Peer, Bytes: 176, Syscall: "write"}, &other}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReplay(tr, nil, testFaults)
			r.Reset(1, 0)
			i, err := r.Next(tt.enabled)
			if err != nil || i != tt.want || r.Moved != tt.moved {
				t.Fatalf("got %d (moved %d, err %v), want %d (moved %d)", i, r.Moved, err, tt.want, tt.moved)
			}
		})
	}
}

// A replay lets a runtime's back-off sleep (HotSpot's VM thread) go by:
// one the recorded run made and this run does not is passed over, and one
// this run makes and the recorded run did not is released without taking
// the recorded op's place. Anything else still parts.
func TestReplayBackoffs(t *testing.T) {
	send := Op{ID: 5, LPID: "zk/0/t0.1.18", Kind: Send, Site: "libnio.so+0x72eb", Peer: "10.77.0.2:2888", Bytes: 20, Syscall: "write"}
	backoff := Op{ID: 4, LPID: "zk/0/t0.1.1", Kind: Sleep, Thread: "VM Thread", Site: "libc.so.6+0xd3e53", Syscall: "clock_nanosleep"}
	other := Op{ID: 6, LPID: "zk/0/t0.1.20", Kind: Sleep, Thread: "WorkerSender", Site: "libc.so.6+0xd3e53", Syscall: "clock_nanosleep"}
	aux := Op{ID: 7, LPID: "r1/0.6/t0.7", Kind: Poll, Thread: "1_aux", Site: "beam.smp+0x27c175", Syscall: "ppoll"}
	poller := Op{ID: 8, LPID: "r1/0.6/t0.8", Kind: Poll, Thread: "0_poller", Site: "beam.smp+0x26a839", Syscall: "epoll_wait"}
	vmOther := Op{ID: 9, LPID: backoff.LPID, Kind: Recv, Thread: "VM Thread", Site: "libc.so.6+0x11e8a2", Syscall: "read"}
	for _, tt := range []struct {
		name     string
		recorded []Op
		enabled  []*Op
		ready    bool // false: the replay settles again first
		want     int  // -1: parts
		backoffs int
	}{
		// Not made: passed over at once when the op after it is here,
		// waited for (Ready false) when not, as that op may wait on it.
		{"recorded, not made", []Op{backoff, send}, []*Op{&send}, true, 0, 1},
		{"recorded, not made, nor the op after it", []Op{backoff, send}, []*Op{&poller}, false, -1, 0},
		{"recorded, its thread at another op", []Op{backoff, send}, []*Op{&send, &vmOther}, true, 0, 1},
		{"made, not recorded", []Op{send}, []*Op{&backoff}, true, 0, 1},
		{"made and recorded", []Op{backoff, send}, []*Op{&send, &backoff}, true, 1, 0},
		{"another sleep, not recorded", []Op{send}, []*Op{&other}, false, -1, 0},
		{"an aux thread's poll, recorded, not made", []Op{aux, send}, []*Op{&send}, true, 0, 1},
		{"an aux thread's poll and the op after it not made", []Op{aux, send}, []*Op{&poller}, false, -1, 0},
		{"an aux thread's poll, made, not recorded", []Op{send}, []*Op{&aux}, true, 0, 1},
		{"another poll, not recorded", []Op{send}, []*Op{&poller}, false, -1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := replayOf(tt.recorded...)
			if got := r.Ready(tt.enabled); got != tt.ready {
				t.Errorf("ready %v, want %v", got, tt.ready)
			}
			if replayNext(t, r, tt.enabled, tt.want) && r.Backoffs != tt.backoffs {
				t.Fatalf("back-offs %d, want %d", r.Backoffs, tt.backoffs)
			}
		})
	}
}

// A replay releases back-offs the recorded run did not make while the
// recorded op does not come, but not without end: a runtime polling on
// and on has parted from the recorded run.
func TestReplayExtraBackoffsBounded(t *testing.T) {
	send := Op{ID: 5, LPID: "r1/0.6/t0.4", Kind: Send, Thread: "1_scheduler", Site: "beam.smp+0x285b46", Peer: "10.77.0.2:32772", Bytes: 48, Syscall: "writev"}
	aux := Op{ID: 7, LPID: "r1/0.6/t0.7", Kind: Poll, Thread: "1_aux", Site: "beam.smp+0x27c175", Syscall: "ppoll"}
	r := NewReplay(&Trace{Records: []Record{{Op: send}}}, nil, testFaults)
	r.Reset(1, 0)
	for n := 0; ; n++ {
		i, err := r.Next([]*Op{&aux})
		if err != nil {
			if n != maxExtraBackoffs {
				t.Fatalf("parted after %d extra polls, want %d", n, maxExtraBackoffs)
			}
			break
		}
		if i != 0 || n > maxExtraBackoffs {
			t.Fatalf("extra poll %d: released %d", n, i)
		}
	}
	// A matched op starts the count again.
	r.Reset(1, 0)
	for range maxExtraBackoffs - 1 {
		if _, err := r.Next([]*Op{&aux}); err != nil {
			t.Fatal(err)
		}
	}
	if i, err := r.Next([]*Op{&aux, &send}); err != nil || i != 1 {
		t.Fatalf("released %d (%v), want the recorded send", i, err)
	}
	if r.extras != 0 {
		t.Fatalf("%d extra back-offs counted after the recorded op, want 0", r.extras)
	}
}

// A thread's op made from another call site than the recorded one is the
// recorded op when nothing else is, and no more: another thread, another
// connection or another byte count still parts.
func TestReplayResited(t *testing.T) {
	send := Op{ID: 5, LPID: "r2/0.6/t0.4", Kind: Send, Thread: "1_scheduler", Site: "beam.smp+0x285b46", Conn: "10.77.0.2:25672-10.77.0.3:32771", Peer: "10.77.0.3:32771", Bytes: 178, Syscall: "writev"}
	at := func(f func(o *Op)) *Op { o := send; o.Site = "beam.smp+0x240818"; f(&o); return &o }
	for _, tt := range []struct {
		name    string
		enabled []*Op
		want    int // -1: parts
		resited int
	}{
		{"the recorded site", []*Op{&send}, 0, 0},
		{"another site", []*Op{at(func(*Op) {})}, 0, 1},
		{"another site beside the recorded one", []*Op{at(func(*Op) {}), &send}, 1, 0},
		{"another thread", []*Op{at(func(o *Op) { o.LPID = "r2/0.6/t0.5" })}, -1, 0},
		{"another connection", []*Op{at(func(o *Op) { o.Conn = "10.77.0.2:25672-10.77.0.1:32770" })}, -1, 0},
		{"another syscall", []*Op{at(func(o *Op) { o.Syscall = "sendmsg" })}, -1, 0},
		{"another byte count", []*Op{at(func(o *Op) { o.Bytes = 152 })}, -1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReplay(&Trace{Records: []Record{{Op: send}}}, nil, testFaults)
			r.Reset(1, 0)
			if got := r.Ready(tt.enabled); got != (tt.want >= 0 || tt.resited > 0) {
				t.Errorf("ready %v", got)
			}
			if replayNext(t, r, tt.enabled, tt.want) && r.Resited != tt.resited {
				t.Fatalf("resited %d, want %d", r.Resited, tt.resited)
			}
		})
	}
}

// On an Erlang distribution connection the recorded op carrying another
// byte count is released and counted (the VM's atom cache may encode one
// term at two lengths); another peer, a message that is not the VM's or a
// fault's other size still parts, and a later divergence names the first
// op of another count.
func TestReplayResized(t *testing.T) {
	deliver := Op{ID: 3996, LPID: "c/0/t0.4", Kind: Deliver, Thread: "1_scheduler", Site: "beam.smp+0x285b46", Conn: "10.77.0.2:32769>10.77.0.1:60998", Peer: "10.77.0.1:60998", Bytes: 1062, Syscall: "deliver"}
	recv := Op{ID: 4000, LPID: "s/0/t0.4", Kind: Recv, Thread: "1_scheduler", Site: "beam.smp+0x284f8b", Bytes: 1460, Syscall: "recvfrom"}
	// The first bytes of Mnesia's merge_schema: its length, the version,
	// a distribution header with 40 atom cache references.
	dist := []byte("\x00\x00\x04\"\x83D(\x07\x8bo8\xff\x9fI")
	text := []byte("\x00\x00\x04\"SET k1 v1\r\n")
	with := func(o Op, f func(o *Op)) *Op { f(&o); return &o }
	shorter := with(deliver, func(o *Op) { o.Bytes = 1059 })
	for _, tt := range []struct {
		name     string
		data     []byte  // the recorded delivery's first bytes
		enabled  [][]*Op // offered at each step
		parts    int     // the step that parts, -1: none
		resized  int
		mentions string // in the error, when one parts
	}{
		{"the recorded count", dist, [][]*Op{{&deliver}, {&recv}}, -1, 0, ""},
		{"3 bytes fewer", dist, [][]*Op{{shorter}, {&recv}}, -1, 1, ""},
		{"3 bytes fewer, not the VM's message", text, [][]*Op{{shorter}}, 0, 0, "bytes: expected 1062, got 1059"},
		{"3 bytes fewer, no bytes kept", nil, [][]*Op{{shorter}}, 0, 0, "bytes"},
		{"another peer", dist, [][]*Op{{with(deliver, func(o *Op) { o.Peer = "10.77.0.3:4369" })}}, 0, 0, "peer"},
		{"another peer and count", dist, [][]*Op{{with(*shorter, func(o *Op) { o.Peer = "10.77.0.3:4369" })}}, 0, 0, "bytes"},
		{"parted after one", dist, [][]*Op{{shorter}, {with(recv, func(o *Op) { o.Syscall = "readv" })}}, 1, 1, "before it, another byte count at step 1: #3996 c/0/t0.4 deliver"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReplay(&Trace{Records: []Record{{Step: 1, Op: deliver, Data: tt.data}, {Step: 2, Op: recv}}}, nil, testFaults)
			r.Reset(1, 0)
			for step, enabled := range tt.enabled {
				i, err := r.Next(enabled)
				if step == tt.parts {
					if err == nil || !strings.Contains(err.Error(), tt.mentions) {
						t.Fatalf("step %d: released %d (%v), want a divergence naming %q", step, i, err, tt.mentions)
					}
					break
				}
				if err != nil || i != 0 {
					t.Fatalf("step %d: released %d (%v), want 0", step, i, err)
				}
			}
			if r.Resized != tt.resized {
				t.Errorf("resized %d, want %d", r.Resized, tt.resized)
			}
			if tt.resized > 0 && !strings.Contains(r.FirstResized, "the trace has 1062 bytes") {
				t.Errorf("first resized %q does not name the recorded count", r.FirstResized)
			}
			// The next trial's replay starts afresh.
			if r.Reset(1, 0); r.Resized != 0 || r.FirstResized != "" {
				t.Errorf("after Reset: resized %d, %q", r.Resized, r.FirstResized)
			}
		})
	}
	hold := Op{ID: 7, LPID: "lockstep", Kind: Kind("hold"), Node: "s", Bytes: 1}
	if Resized(&hold, with(hold, func(o *Op) { o.Bytes = 2 }), dist) {
		t.Error("a fault of another size counted as resized")
	}
}

// A replay owes the run its next decision, a back-off aside, and says
// whether that op is offered: the clients' exits do not end the run
// before it.
func TestReplayOwes(t *testing.T) {
	poll := Op{ID: 9, LPID: "c/0.3/t0", Kind: Poll, Thread: "erl_child_setup", Site: "erl_child_setup+0x3c51", Syscall: "pselect6"}
	aux := Op{ID: 7, LPID: "c/0/t0.18", Kind: Poll, Thread: "1_aux", Site: "beam.smp+0x27c175", Syscall: "ppoll"}
	other := Op{ID: 8, LPID: "s/0/t0.4", Kind: Poll, Thread: "1_scheduler", Site: "beam.smp+0x26a839", Syscall: "epoll_wait"}
	for _, tt := range []struct {
		name     string
		recorded []Op
		enabled  []*Op
		left     bool
		here     bool
	}{
		{"its next op offered", []Op{poll}, []*Op{&other, &poll}, true, true},
		{"its next op not offered", []Op{poll}, []*Op{&other}, true, false},
		{"a back-off before it", []Op{aux, poll}, []*Op{&poll}, true, true},
		{"only back-offs left", []Op{aux}, []*Op{&aux}, false, false},
		{"nothing left", nil, []*Op{&poll}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := replayOf(tt.recorded...)
			if left, here := r.Owes(tt.enabled); left != tt.left || here != tt.here {
				t.Errorf("owes %v, here %v; want %v, %v", left, here, tt.left, tt.here)
			}
		})
	}
}

func TestRuntimeBackoffThreads(t *testing.T) {
	for _, tt := range []struct {
		kind   Kind
		thread string
		want   bool
	}{
		{Sleep, "VM Thread", true},
		{Poll, "VM Thread", false},
		{Poll, "1_aux", true},
		{Poll, "12_aux", true},
		{Sleep, "1_aux", false},
		{Poll, "_aux", false},
		{Poll, "x1_aux", false},
		{Poll, "0_poller", false},
		{Poll, "1_scheduler", true},
		{Poll, "12_scheduler", true},
		{Sleep, "1_scheduler", false},
		{Poll, "1_dirty_cpu_scheduler", false},
		{Poll, "1_dirty_io_scheduler", false},
		{Poll, "_scheduler", false},
	} {
		o := Op{Kind: tt.kind, Thread: tt.thread}
		if got := o.RuntimeBackoff(); got != tt.want {
			t.Errorf("%s of %q: RuntimeBackoff %v, want %v", tt.kind, tt.thread, got, tt.want)
		}
	}
}
