package sched

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// simulateAll runs a strategy over ops that are all enabled from the start
// (a deliver per process, one object each) and returns the release order
// by ID, the records and the choices offered at each step.
func simulateAll(t *testing.T, s Strategy, ops []Op) ([]uint64, []Record, [][]Op) {
	t.Helper()
	s.Reset(1, 0)
	left := make([]*Op, len(ops))
	for i := range ops {
		left[i] = &ops[i]
	}
	var order []uint64
	var recs []Record
	var choices [][]Op
	for step := 1; len(left) > 0; step++ {
		c := make([]Op, len(left))
		for i, o := range left {
			c[i] = *o
		}
		choices = append(choices, c)
		i, err := s.Next(left)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, left[i].ID)
		recs = append(recs, Record{Step: step, Op: *left[i]})
		left = slices.Delete(left, i, i+1)
	}
	return order, recs, choices
}

func testOps(n int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = Op{ID: uint64(i + 1), Node: fmt.Sprintf("n%d", i), LPID: fmt.Sprintf("n%d/0/t0", i), Kind: Deliver, Object: fmt.Sprintf("inbox:m%d", i%2)}
	}
	return ops
}

// fixed releases ops in a given order of IDs.
type fixed struct{ order []uint64 }

func (f *fixed) Name() string     { return "fixed" }
func (f *fixed) Reset(int64, int) {}
func (f *fixed) Next(enabled []*Op) (int, error) {
	for i, o := range enabled {
		if o.ID == f.order[0] {
			f.order = f.order[1:]
			return i, nil
		}
	}
	return 0, fmt.Errorf("%d not enabled", f.order[0])
}

// TestDecisionsReproduce: the default order has no decisions; any other
// order's decisions, all forced, give that order back, and none forced
// give the default order.
func TestDecisionsReproduce(t *testing.T) {
	for _, want := range [][]uint64{
		{1, 2, 3, 4, 5},
		{2, 1, 3, 4, 5},
		{5, 4, 3, 2, 1},
		{3, 1, 5, 2, 4},
	} {
		_, recs, choices := simulateAll(t, &fixed{order: slices.Clone(want)}, testOps(5))
		ds, err := Decisions(recs, choices)
		if err != nil {
			t.Fatal(err)
		}
		if slices.IsSorted(want) && len(ds) != 0 {
			t.Errorf("%v: the default order has decisions %v", want, ds)
		}
		got, _, _ := simulateAll(t, NewForced(ds, testFaults), testOps(5))
		if !slices.Equal(got, want) {
			t.Errorf("%v: forcing its %d decisions gave %v", want, len(ds), got)
		}
		if got, _, _ := simulateAll(t, NewForced(nil, testFaults), testOps(5)); !slices.IsSorted(got) {
			t.Errorf("no decisions forced gave %v, want the default order", got)
		}
	}
}

// TestForcedHoldToEnd: an op the trace never released is held while
// anything else can run, then released (the hold is skipped).
func TestForcedHoldToEnd(t *testing.T) {
	ops := testOps(3)
	// The trace released 2 and 3; 1 was still in flight when it ended.
	recs := []Record{{Step: 1, Op: ops[1]}, {Step: 2, Op: ops[2]}}
	choices := [][]Op{{ops[0], ops[1], ops[2]}, {ops[0], ops[2]}}
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Kind != HoldDecision || ds[0].Op.ID != 1 || ds[0].Step != 0 || ds[0].After == nil || ds[0].AfterStep != 2 {
		t.Fatalf("decisions %v: want op 1 held to the end", ds)
	}
	got, _, _ := simulateAll(t, NewForced(ds, testFaults), testOps(3))
	if !slices.Equal(got, []uint64{2, 3, 1}) {
		t.Errorf("forced order %v, want 2 3 1", got)
	}
}

// TestForcedInject: an advance is injected right after its predecessor;
// one that is not offered is made by Extra while its target lies ahead,
// and dropped when it does not.
func TestForcedInject(t *testing.T) {
	ops := testOps(2)
	adv := Op{ID: 1 << 48, Node: "n0", LPID: "n0/0/t0", Kind: Advance, Object: "time", Syscall: "poll", At: 200}
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: adv}, {Step: 3, Op: ops[1]}}
	choices := [][]Op{{ops[0], ops[1], adv}, {ops[1], adv}, {ops[1]}}
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Kind != InjectDecision || ds[0].After == nil || ds[0].AfterStep != 1 {
		t.Fatalf("decisions %v: want the advance injected after step 1", ds)
	}
	f := NewForced(ds, testFaults)
	f.Reset(1, 0)
	a, b := ops[0], ops[1]
	if i, _ := f.Next([]*Op{&a, &b}); i != 0 {
		t.Fatalf("first: %d", i)
	}
	extra := f.Extra(100, []*Op{&b})
	if len(extra) != 1 || extra[0].At != 200 || extra[0].Delay != 100 {
		t.Fatalf("Extra gave %v, want the advance to 200 made", extra)
	}
	if i, _ := f.Next([]*Op{&b, extra[0]}); i != 1 {
		t.Errorf("the due advance was not chosen")
	}
	g := NewForced(ds, testFaults)
	g.Reset(1, 0)
	g.Next([]*Op{&a, &b})
	if extra := g.Extra(300, []*Op{&b}); len(extra) != 0 {
		t.Errorf("Extra made an advance to a time past: %v", extra)
	}
	if i, _ := g.Next([]*Op{&b}); i != 0 || g.Skipped != 1 {
		t.Errorf("the advance not offered was not skipped (index %d, skipped %d)", i, g.Skipped)
	}
}

// TestForcedIdle: with no traced op offered (every thread waits on a
// timer, a node is down), the default takes an advance, else a restart or
// heal, and fails only when neither is there.
func TestForcedIdle(t *testing.T) {
	adv := &Op{ID: 1<<48 + 1, Node: "n0", LPID: "n0/0/t0", Kind: Advance, Object: "time", At: 200}
	restart := &Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: "restart", Object: "node:n1"}
	crash := &Op{ID: 1<<52 + 2, Node: "n0", LPID: "fault", Kind: crashKind, Object: "node:n0"}
	for _, tc := range []struct {
		name    string
		enabled []*Op
		want    int
	}{
		{"advance first", []*Op{restart, adv}, 1},
		{"a restart", []*Op{crash, restart}, 1},
		{"nothing to take", []*Op{crash}, -1},
	} {
		f := NewForced(nil, testFaults)
		f.Reset(1, 0)
		i, err := f.Next(tc.enabled)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("%s: chose %d, want an error", tc.name, i)
			}
			continue
		}
		if err != nil || i != tc.want {
			t.Errorf("%s: chose %d (%v), want %d", tc.name, i, err, tc.want)
		}
	}
}

// TestForcedDeclines: a fault offered alone in a lull is declined unless
// it is a due injected decision's.
func TestForcedDeclines(t *testing.T) {
	ops := testOps(1)
	crash := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1"}
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: crash}}
	ds, err := Decisions(recs, [][]Op{{ops[0]}, {crash}})
	if err != nil {
		t.Fatal(err)
	}
	other := crash
	other.Node, other.Object = "n0", "node:n0"
	f := NewForced(ds, testFaults)
	f.Reset(1, 0)
	if !f.Declines(&crash) {
		t.Error("a crash not yet due was taken")
	}
	a := ops[0]
	f.Next([]*Op{&a})
	if f.Declines(&crash) {
		t.Error("the due crash was declined")
	}
	if !f.Declines(&other) {
		t.Error("a crash of another node was taken")
	}
	if !NewForced(nil, testFaults).Declines(&crash) {
		t.Error("the default order took a fault of its own")
	}
}

// TestRecorderPassesOn: a Recorder records choices without changing the
// run it wraps: it declines what the wrapped strategy declines (Forced
// takes no fault of its own, a replay none but its trace's next) and waits
// where a replay waits; around a strategy that does neither, it does
// neither.
func TestRecorderPassesOn(t *testing.T) {
	ops := testOps(1)
	crash := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1"}
	send := ops[0]
	rep := NewReplay(&Trace{Records: []Record{{Step: 1, Op: send}, {Step: 2, Op: crash}}}, nil, testFaults)
	rep.Reset(1, 0)
	for _, tc := range []struct {
		name           string
		s              Strategy
		declines, done bool
		ready          bool // with only the crash enabled
	}{
		{"forced", NewForced(nil, testFaults), true, false, true},
		{"replay before its send", rep, true, false, false},
		{"oldest", Oldest{}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Reset(1, 0)
			r := &Recorder{Strategy: tc.s}
			var s Strategy = r
			d, ok := s.(Decliner)
			if !ok || d.Declines(&crash) != tc.declines {
				t.Errorf("Declines(crash): decliner %v, want %v", ok, tc.declines)
			}
			a, ok := s.(Awaiter)
			if !ok || a.Done() != tc.done || a.Ready([]*Op{&crash}) != tc.ready {
				t.Errorf("awaiter %v: Done %v, Ready %v; want %v, %v", ok, a.Done(), a.Ready([]*Op{&crash}), tc.done, tc.ready)
			}
		})
	}
}

// TestForcedCorruptKeepsDraw: a corruption the engine offers carries a
// variant and a pick it drew itself; the forced run takes it with the
// trace's (tail, pick 7), so the same byte of the same file is damaged.
func TestForcedCorruptKeepsDraw(t *testing.T) {
	ops := testOps(2)
	cor := Op{ID: 1 << 48, Node: "n1", LPID: "n1", Kind: corruptKind, Object: "node:n1", Disk: "tail", Pick: 7}
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: cor}, {Step: 3, Op: ops[1]}}
	choices := [][]Op{{ops[0], ops[1], cor}, {ops[1], cor}, {ops[1]}}
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Kind != InjectDecision {
		t.Fatalf("decisions %v: want the corruption injected", ds)
	}
	f := NewForced(ds, testFaults)
	f.Reset(1, 0)
	a, b := ops[0], ops[1]
	if i, _ := f.Next([]*Op{&a, &b}); i != 0 {
		t.Fatalf("first: %d", i)
	}
	offered := cor
	offered.ID, offered.Disk, offered.Pick = 1<<48+5, "flip", 99
	i, err := f.Next([]*Op{&b, &offered})
	if err != nil || i != 1 {
		t.Fatalf("the corruption was not taken: %d, %v", i, err)
	}
	if offered.Disk != "tail" || offered.Pick != 7 {
		t.Errorf("taken as %s pick %d, want the trace's tail pick 7", offered.Disk, offered.Pick)
	}
}

// testFaults is how package faults says its kinds replay (faults.ReplayOf),
// for the kinds these tests use.
func testFaults(k Kind) FaultReplay {
	switch k {
	case "crash", "partition", "pause", "clock", "drift", "ioerror", "stall":
		return FaultReplay{Remake: true}
	case "power":
		return FaultReplay{Remake: true, KeepDraw: true}
	case "corrupt":
		return FaultReplay{KeepDraw: true}
	case "restart", "heal":
		return FaultReplay{Recovery: true}
	}
	return FaultReplay{}
}

// TestFaultReplaysPerKind: whether a replay makes a fault up is its
// kind's say (FaultReplays), not sched's: a kind sched has never heard of
// is remade when its FaultReplay says so, and taken only as offered when
// it does not.
func TestFaultReplaysPerKind(t *testing.T) {
	ops := testOps(2)
	quake := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: "quake", Object: "node:n1", Delay: 5}
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: quake}, {Step: 3, Op: ops[1]}}
	ds, err := Decisions(recs, [][]Op{{ops[0], ops[1]}, {ops[1], quake}, {ops[1]}})
	if err != nil {
		t.Fatal(err)
	}
	for _, remake := range []bool{false, true} {
		fr := func(k Kind) FaultReplay { return FaultReplay{Remake: remake && k == "quake"} }
		f := NewForced(ds, fr)
		f.Reset(1, 0)
		a, b := ops[0], ops[1]
		f.Next([]*Op{&a, &b})
		x := f.Extra(0, []*Op{&b})
		if got := len(x) == 1 && x[0].Kind == "quake" && x[0].Delay == 5; got != remake {
			t.Errorf("remake %v: Forced.Extra made %v", remake, x)
		}
		r := NewReplay(&Trace{Records: recs[1:]}, nil, fr)
		r.Reset(1, 0)
		y := r.Extra(0, []*Op{&b})
		if got := len(y) == 1 && y[0].Kind == "quake"; got != remake {
			t.Errorf("remake %v: Replay.Extra made %v", remake, y)
		}
	}
}

// TestForcedMadeProbeAimed: a probe-aimed fault the engine does not offer
// at its due decision is made up from its record (its kind remakes), aimed
// where the trace had it, and taken there, its record recalled for the
// engine to keep its draws; before, the made-up copy, which has its node,
// did not look like an offer for the probe to aim and was skipped. An
// offer of the kind still aimed by the probe is taken as before.
func TestForcedMadeProbeAimed(t *testing.T) {
	ops := testOps(2)
	hold := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: "quake", Object: ProbeObject, Aimed: true, Conn: "messages from n1", Delay: 5}
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: hold}, {Step: 3, Op: ops[1]}}
	offer := Op{ID: 1<<52 + 7, LPID: "fault", Kind: "quake", Object: ProbeObject}
	ds, err := Decisions(recs, [][]Op{{ops[0], ops[1]}, {ops[1], offer}, {ops[1]}})
	if err != nil {
		t.Fatal(err)
	}
	fr := func(k Kind) FaultReplay { return FaultReplay{Remake: k == "quake"} }
	for _, offered := range []bool{false, true} {
		f := NewForced(ds, fr)
		f.Reset(1, 0)
		a, b := ops[0], ops[1]
		f.Next([]*Op{&a, &b})
		en := []*Op{&b}
		if offered {
			o := offer
			en = append(en, &o)
		}
		x := f.Extra(0, en)
		if offered != (len(x) == 0) {
			t.Fatalf("offered %v: Extra made %v", offered, x)
		}
		en = append(en, x...)
		i, err := f.Next(en)
		if err != nil {
			t.Fatal(err)
		}
		if got := en[i]; got.Kind != "quake" || f.Skipped != 0 {
			t.Fatalf("offered %v: released %v (skipped %d), want the fault", offered, got, f.Skipped)
		}
		if rec := f.Recalled(); rec == nil || rec.Node != "n1" || rec.Conn != "messages from n1" || rec.Delay != 5 {
			t.Errorf("offered %v: recalled %v, want the trace's record", offered, rec)
		}
	}
}

// TestReplayDeclines: a replay takes a fault offered alone in a lull only
// when it is the trace's next decision; a step-triggered injection due
// where the trace has a sleep is declined, so the clock moves as it did
// in the recorded run.
func TestReplayDeclines(t *testing.T) {
	ops := testOps(2)
	sleep := ops[1]
	sleep.Kind, sleep.Syscall = Sleep, "nanosleep"
	crash := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1"}
	other := crash
	other.Node, other.Object = "n0", "node:n0"
	pause := crash
	pause.Kind = "pause"
	tr := &Trace{Records: []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: sleep}, {Step: 3, Op: crash}}}
	r := NewReplay(tr, nil, testFaults)
	r.Reset(1, 0)
	cases := []struct {
		step     int // records already replayed
		op       *Op
		declines bool
	}{
		{0, &crash, true},  // the trace's next op is the send
		{1, &crash, true},  // the sleep: the crash comes after it
		{2, &crash, false}, // the trace's crash
		{2, &pause, true},  // another kind
		// Of the trace's kind: what it hits may be settled only when it
		// is chosen (a probe's aim), and the replay takes the recorded one
		// or makes it up.
		{2, &other, false},
		{3, &crash, true}, // past the trace: no fault of its own
	}
	replayed := 0
	for _, c := range cases {
		for ; replayed < c.step; replayed++ {
			want := tr.Records[replayed].Op
			if _, err := r.Next([]*Op{&want}); err != nil {
				t.Fatal(err)
			}
		}
		if got := r.Declines(c.op); got != c.declines {
			t.Errorf("after %d records: Declines(%v) = %v, want %v", c.step, c.op, got, c.declines)
		}
	}
}

// connRecvs are a thread-per-connection server's recvs, one per client
// connection, all on its one inbox from one call site; threads[i] is the
// thread serving client i, port[i] the client's ephemeral port.
func connRecvs(threads []int, ports []int) []Op {
	ops := make([]Op, len(threads))
	for i := range ops {
		ops[i] = Op{ID: uint64(i + 1), Node: "n2", LPID: fmt.Sprintf("n2/0/t%d", threads[i]), Kind: Recv, Object: "inbox:n2/0",
			Site: "srv+0x1d2", Syscall: "recvfrom", Conn: fmt.Sprintf("10.77.0.%d:%d>10.77.0.2:7000", 3+i, ports[i])}
	}
	return ops
}

// connOrder is the order of the clients whose recvs were released, by
// their addresses.
func connOrder(recs []Record) []string {
	var out []string
	for _, r := range recs {
		c, _, _ := strings.Cut(r.Op.Conn, ":")
		out = append(out, c)
	}
	return out
}

// TestForcedConnIdentity: a server that serves each connection on a
// thread of its own reads its connections in the order the trace did
// when its decisions are forced, in runs whose threads serve other
// connections (accepts in another order) and whose clients got other
// ephemeral ports; the recvs are not named by their position on the
// inbox, which is another connection's in such a run.
func TestForcedConnIdentity(t *testing.T) {
	trace := connRecvs([]int{1, 2, 3}, []int{32768, 32768, 32768})
	_, recs, choices := simulateAll(t, &fixed{order: []uint64{3, 1, 2}}, trace)
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	want := connOrder(recs)
	cases := []struct {
		name    string
		threads []int
		ports   []int
	}{
		{"same threads", []int{1, 2, 3}, []int{32768, 32768, 32768}},
		{"threads serve other connections", []int{3, 1, 2}, []int{32768, 32768, 32768}},
		{"other ephemeral ports", []int{1, 2, 3}, []int{32770, 32769, 40000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got, _ := simulateAll(t, NewForced(ds, testFaults), connRecvs(c.threads, c.ports))
			if g := connOrder(got); !slices.Equal(g, want) {
				t.Errorf("forcing %v gave the connections in order %v, want the trace's %v", ds, g, want)
			}
		})
	}
}

// TestKeyConn: an op's key names its connection by the connecting
// side's host and the rank of the connection among that host's
// connections to the same server, in the order the run first offered an
// op on each, never by the ephemeral port; both directions of one
// connection have one name, and a pool's connections to one server are
// told apart.
func TestKeyConn(t *testing.T) {
	cases := []struct {
		name  string
		conns []string // offered in this order
		want  []string // their names
	}{
		{"one connection, both directions",
			[]string{"10.77.0.3:32770>10.77.0.2:7000", "10.77.0.2:7000>10.77.0.3:32770"},
			[]string{"10.77.0.3#0>10.77.0.2:7000", "10.77.0.2:7000>10.77.0.3#0"}},
		{"a pool of two, the later port first",
			[]string{"10.77.0.3:32771>10.77.0.2:7001", "10.77.0.3:32770>10.77.0.2:7001", "10.77.0.2:7001>10.77.0.3:32771"},
			[]string{"10.77.0.3#0>10.77.0.2:7001", "10.77.0.3#1>10.77.0.2:7001", "10.77.0.2:7001>10.77.0.3#0"}},
		{"two servers rank apart",
			[]string{"10.77.0.3:32768>10.77.0.1:7000", "10.77.0.3:32769>10.77.0.2:7001"},
			[]string{"10.77.0.3#0>10.77.0.1:7000", "10.77.0.3#0>10.77.0.2:7001"}},
		{"IPv6", []string{"[fd00::3]:33000>[fd00::2]:7000"}, []string{"fd00::3#0>[fd00::2]:7000"}},
		{"no ephemeral port", []string{"10.77.0.3:5000>10.77.0.2:7000"}, []string{"10.77.0.3:5000>10.77.0.2:7000"}},
		{"both ports ephemeral", []string{"10.77.0.3:40001>10.77.0.2:40000"}, []string{"10.77.0.3>10.77.0.2"}},
		{"none", []string{""}, []string{""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := NewKeyer()
			ops := make([]Op, len(c.conns))
			for i, conn := range c.conns {
				ops[i] = Op{ID: uint64(i + 1), LPID: "n3/0/t0", Kind: Recv, Object: "inbox:n3", Conn: conn}
				k.Offer(&ops[i])
			}
			for i := range ops {
				if got := k.Key(&ops[i]).Conn; got != c.want[i] {
					t.Errorf("connection %q named %q, want %q", c.conns[i], got, c.want[i])
				}
			}
		})
	}
	ops := connRecvs([]int{1, 1}, []int{32768, 32768})
	k := NewKeyer()
	if a, b := k.Key(&ops[0]), k.Key(&ops[1]); a == b {
		t.Errorf("two connections' recvs have one key %v", a)
	}
}

// TestForcedPool: a process with a pool of two connections to one server
// sends a message on each; the trace delivers the second one's first.
// Forcing its decisions delivers them in that order again, also in a run
// where the pool's connections got each other's ports. (With the port
// left out, both deliveries had one key, and the hold of the first one
// held whichever was offered first.)
func TestForcedPool(t *testing.T) {
	pool := func(ports [2]int) []Op {
		ops := make([]Op, 2)
		for i := range ops {
			ops[i] = Op{ID: uint64(i + 1), Node: "app", LPID: fmt.Sprintf("app/0/t%d", i), Kind: Deliver, Object: "inbox:mc",
				Site: "app+0x6dc5", Syscall: "deliver", Conn: fmt.Sprintf("10.77.0.3:%d>10.77.0.2:7001", ports[i])}
		}
		return ops
	}
	_, recs, choices := simulateAll(t, &fixed{order: []uint64{2, 1}}, pool([2]int{32770, 32771}))
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("decisions %v, want the one hold of the first delivery", ds)
	}
	for _, ports := range [][2]int{{32770, 32771}, {32771, 32770}} {
		got, _, _ := simulateAll(t, NewForced(ds, testFaults), pool(ports))
		if !slices.Equal(got, []uint64{2, 1}) {
			t.Errorf("ports %v: forcing %v released %v, want the trace's [2 1]", ports, ds, got)
		}
	}
}

// TestReplayFaultDraws: a replay takes a fault with the draws its trace
// recorded. A minimized trace holds faults explain's forced run made up
// with the original trace's draws; the engine's own offer of that kind
// may carry others (another outage), and a power cut's offer draws its
// variant and pick afresh.
func TestReplayFaultDraws(t *testing.T) {
	rec := Op{ID: extraIDBase + 1, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1", Delay: 300}
	power := Op{ID: 1<<52 + 2, Node: "n1", LPID: "fault", Kind: "power", Object: "node:n1", Delay: 200, Disk: "none", Pick: 7}
	cases := []struct {
		name  string
		want  Op
		offer Op
		made  bool // Extra makes the recorded op up
	}{
		{"the engine offers the recorded crash", rec, func() Op { o := rec; o.ID = 1<<52 + 1; return o }(), false},
		{"the engine's crash lasts otherwise", rec, func() Op { o := rec; o.ID = 1<<52 + 1; o.Delay = 90; return o }(), true},
		{"the engine's power cut drew another variant", power, func() Op { o := power; o.Disk, o.Pick = "all", 3; return o }(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReplay(&Trace{Records: []Record{{Step: 1, Op: c.want}}}, nil, testFaults)
			r.Reset(1, 0)
			offer := c.offer
			choices := []*Op{&offer}
			extra := r.Extra(0, choices)
			if (len(extra) > 0) != c.made {
				t.Fatalf("Extra = %v, want made up %v", extra, c.made)
			}
			choices = append(choices, extra...)
			i, err := r.Next(choices)
			if err != nil {
				t.Fatal(err)
			}
			got := choices[i]
			if got.Delay != c.want.Delay || got.Disk != c.want.Disk || got.Pick != c.want.Pick {
				t.Errorf("took %v (delay %d, %s pick %d), want the trace's delay %d, %s pick %d", got, got.Delay, got.Disk, got.Pick, c.want.Delay, c.want.Disk, c.want.Pick)
			}
		})
	}
}

// TestForcedThreads: a server with a thread per connection has two
// threads write on one subscriber's connection through one write helper
// (one call site), after each read its own connection: the subscriber's
// thread its reply, the publisher's thread a publish fanned out to the
// subscriber. The trace releases the publisher's write first, though the
// reply is older. Forcing its decisions gives that order again, also in
// a run whose threads were created the other way round (the accepts in
// another order). (Named by process, kind, site and connection alone,
// both writes were "the next write there": the trace's one hold was
// taken for the publisher's own op on another thread and dropped, and
// the forced run released the reply first.)
func TestForcedThreads(t *testing.T) {
	const sub, pub = "10.77.0.3:32768>10.77.0.1:7000", "10.77.0.2:32768>10.77.0.1:7000"
	server := func(subThread, pubThread string) []Op {
		op := func(id uint64, thread string, kind Kind, conn string) Op {
			o := Op{ID: id, Node: "broker", LPID: "broker/0/" + thread, Kind: kind, Site: "broker+0x16ea", Conn: conn}
			if kind == Recv {
				o.Site, o.Object = "broker+0x21f1", "inbox:broker"
			}
			return o
		}
		return []Op{
			op(1, subThread, Recv, sub), op(2, pubThread, Recv, pub),
			op(3, subThread, Send, "10.77.0.1:7000>10.77.0.3:32768"), // the reply
			op(4, pubThread, Send, "10.77.0.1:7000>10.77.0.3:32768"), // the publish
		}
	}
	trace := []uint64{1, 2, 4, 3}
	_, recs, choices := simulateAll(t, &fixed{order: slices.Clone(trace)}, server("t1", "t3"))
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Kind != HoldDecision || ds[0].Key.Thread == "" {
		t.Fatalf("decisions %v, want the one hold of the reply, named by its thread", ds)
	}
	for _, threads := range [][2]string{{"t1", "t3"}, {"t3", "t1"}} {
		got, _, _ := simulateAll(t, NewForced(ds, testFaults), server(threads[0], threads[1]))
		if !slices.Equal(got, trace) {
			t.Errorf("threads %v: forcing %v released %v, want the trace's %v", threads, ds, got, trace)
		}
	}
}

// TestKeyThreads: an op is named by its thread only when two threads of
// its process had ops of its identity on offer at once in the run; an op
// that runs on another thread than the one before it (a goroutine moved
// between threads) keeps a key without its thread.
func TestKeyThreads(t *testing.T) {
	send := func(id uint64, thread string) Op {
		return Op{ID: id, LPID: "p/0/" + thread, Kind: Send, Site: "p+0x10", Conn: "10.77.0.1:7000>10.77.0.3:32768"}
	}
	recv := Op{ID: 9, LPID: "p/0/t0", Kind: Recv, Object: "inbox:p", Site: "p+0x20", Conn: "10.77.0.3:32768>10.77.0.1:7000"}
	cases := []struct {
		name    string
		choices [][]Op // the first op of each is released
		threads []string
	}{
		{"alone on offer, on two threads", [][]Op{{send(1, "t1")}, {send(2, "t2")}}, []string{"", ""}},
		{"a thread and another op", [][]Op{{send(1, "t1"), recv}, {recv}}, []string{"", ""}},
		{"two threads at once", [][]Op{{send(2, "t3"), send(1, "t1")}, {send(1, "t1")}}, []string{"t3", "t1"}},
		{"two threads' waits on no connection", [][]Op{
			{{ID: 1, LPID: "p/0/t1", Kind: Poll, Object: "inbox:p", Site: "p+0x30"}, {ID: 2, LPID: "p/0/t2", Kind: Poll, Object: "inbox:p", Site: "p+0x30"}},
			{{ID: 2, LPID: "p/0/t2", Kind: Poll, Object: "inbox:p", Site: "p+0x30"}}}, []string{"", ""}},
		{"two threads at once, one after a recv", [][]Op{{recv}, {send(2, "t0"), send(1, "t1")}, {send(1, "t1")}},
			[]string{"", "on 10.77.0.3#0>10.77.0.1:7000", "t1"}},
		{"one thread's two deliveries", [][]Op{
			{{ID: 1, LPID: "p/0/t1", Kind: Deliver, Object: "inbox:q", Site: "p+0x10"}, {ID: 2, LPID: "p/0/t1", Kind: Deliver, Object: "inbox:q", Site: "p+0x10"}},
			{{ID: 2, LPID: "p/0/t1", Kind: Deliver, Object: "inbox:q", Site: "p+0x10"}}}, []string{"", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := make([]Record, len(c.choices))
			for i := range c.choices {
				recs[i] = Record{Step: i + 1, Op: c.choices[i][0]}
			}
			keys := Keys(recs, c.choices)
			for i, k := range keys {
				if k.Thread != c.threads[i] {
					t.Errorf("op %d named %v, want thread %q", i, k, c.threads[i])
				}
			}
			if keys[0] == keys[1] {
				t.Errorf("two ops have one key %v", keys[0])
			}
		})
	}
}

// datagrams are the deliver ops of n UDP datagrams one client sent to a
// server, in the order it sent them: one sender, one call site, one
// "connection" (the socket's address pair), which a deliver need not
// follow in order (datagrams are independent).
func datagrams(n int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = Op{ID: uint64(2*i + 3), Node: "client", LPID: "client/0/t0", Kind: Deliver, Object: "inbox:server",
			Site: "udp_client+0x1229", Syscall: DatagramSyscall, Conn: "10.77.0.2:32768>10.77.0.1:7000", Bytes: 6}
	}
	return ops
}

// TestForcedDatagramIdentity: datagrams on one socket pair are delivered
// in any order, so a datagram's deliver is named by its place among the
// datagrams sent, not among those delivered before it: a trace that
// delivered the third before the second (the drop fault's faults/drop.yaml
// trace, whose second datagram was then lost) gives that order again when
// its decisions are forced, and a datagram never delivered is held to
// the end. Named by delivery position, both the second and the third were
// "the second deliver" and the forced run delivered the second at once.
func TestForcedDatagramIdentity(t *testing.T) {
	for _, want := range [][]uint64{
		{3, 7, 5, 9},
		{9, 7, 5, 3},
		{3, 7, 9, 5},
	} {
		_, recs, choices := simulateAll(t, &fixed{order: slices.Clone(want)}, datagrams(4))
		ds, err := Decisions(recs, choices)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := simulateAll(t, NewForced(ds, testFaults), datagrams(4)); !slices.Equal(got, want) {
			t.Errorf("%v: forcing its decisions %v gave %v", want, ds, got)
		}
	}
	// The second datagram never delivered (dropped): held to the end.
	ops := datagrams(3)
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: ops[2]}}
	choices := [][]Op{{ops[0], ops[1], ops[2]}, {ops[1], ops[2]}}
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Op.ID != ops[1].ID || ds[0].AfterStep != 2 {
		t.Fatalf("decisions %v: want the second datagram held to the end", ds)
	}
	if got, _, _ := simulateAll(t, NewForced(ds, testFaults), datagrams(3)); !slices.Equal(got, []uint64{3, 7, 5}) {
		t.Errorf("forced order %v, want 3 7 5", got)
	}
}

// TestForcedLooseAnchor: a fault anchored on a message of one connection
// is made, in a run whose messages took another connection, once as many
// messages of its process to that inbox have passed and the clock has
// reached the trace's time for it; not before either, and in a run that
// follows the trace, right after its anchor as ever.
func TestForcedLooseAnchor(t *testing.T) {
	send := func(id uint64, conn string) Op {
		return Op{ID: id, Node: "n3", LPID: "n3/0/t4", Kind: Deliver, Object: "inbox:n2", Site: "flush", Conn: conn}
	}
	const mine, theirs = "10.77.0.3:32768>10.77.0.2:6222", "10.77.0.2:32768>10.77.0.3:6222"
	other := Op{ID: 9, Node: "n1", LPID: "n1/0/t1", Kind: Sleep, Object: "time"}
	crash := Op{ID: 1 << 52, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1", Delay: 500}
	d0, d1, d2 := send(1, mine), send(2, mine), send(3, mine)
	recs := []Record{{Step: 1, Op: d0}, {Step: 2, Op: d1}, {Step: 3, VTime: 50, Op: d2}, {Step: 4, VTime: 50, Op: crash}, {Step: 5, VTime: 50, Op: other}}
	choices := [][]Op{{d0, other}, {d1, other}, {d2, other}, {other, crash}, {other}}
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Loose == nil || ds[0].Loose.Conn != "" || ds[0].Loose.N != 2 || ds[0].VTime == nil || *ds[0].VTime != 50 {
		t.Fatalf("decisions %+v: want the crash, loosely after n3's third message", ds)
	}
	// step offers choices at now; it returns what was chosen.
	step := func(f *Forced, now time.Duration, offered ...Op) Op {
		t.Helper()
		var en []*Op
		for i := range offered {
			en = append(en, &offered[i])
		}
		en = append(en, f.Extra(now, en)...)
		i, err := f.Next(en)
		if err != nil {
			t.Fatal(err)
		}
		return *en[i]
	}
	// The messages come by 40, sooner than in the trace.
	for _, tc := range []struct {
		name       string
		conn       string
		at40, late bool // the crash comes at 40 (else at 50); made by the clock
	}{
		{"the trace's connection", mine, true, false},
		{"the other connection", theirs, false, true},
	} {
		f := NewForced(ds, testFaults)
		f.Reset(1, 0)
		step(f, 0, send(1, tc.conn), other)
		step(f, 0, send(2, tc.conn), other)
		step(f, 40, send(3, tc.conn), other)
		if got := step(f, 40, other); (got.Kind == crashKind) != tc.at40 {
			t.Errorf("%s: at 40 chose %v, want the crash: %v", tc.name, got.Kind, tc.at40)
		}
		if !tc.at40 {
			if got := step(f, 50, other); got.Kind != crashKind {
				t.Errorf("%s: at 50 chose %v, want the crash", tc.name, got.Kind)
			}
		}
		if (f.Late == 1) != tc.late {
			t.Errorf("%s: %d faults made by the clock", tc.name, f.Late)
		}
	}
	// Offered alone in a lull at 50, as the engine offers a fault whose
	// trigger the clock reached: taken, the clock told first (through a
	// Recorder, as explain's runs that keep their choices wrap it).
	f := NewForced(ds, testFaults)
	f.Reset(1, 0)
	step(f, 0, send(1, theirs), other)
	step(f, 0, send(2, theirs), other)
	step(f, 40, send(3, theirs), other)
	offer := crash
	if !f.Declines(&offer) {
		t.Errorf("the crash offered in a lull at 40 was not declined")
	}
	var c Clocked = &Recorder{Strategy: f} // as explain wraps it
	if c.Clock(50); f.Declines(&offer) {
		t.Errorf("the crash offered in a lull at 50 was declined")
	}
	// Two messages on the other connection: the loose anchor has not
	// come, however late.
	f = NewForced(ds, testFaults)
	f.Reset(1, 0)
	step(f, 0, send(1, theirs), other)
	step(f, 0, send(2, theirs), other)
	if got := step(f, 1000, other); got.Kind == crashKind {
		t.Errorf("the crash came before n3's third message")
	}
}

// TestForcedFollows: a forced run that follows the run its decisions came
// from waits (Ready false) while that run's next op is not offered, as the
// replay did, and no longer once it has released another op; it never
// waits for a fault, which it makes itself or not at all.
func TestForcedFollows(t *testing.T) {
	ops := testOps(3)
	crash := Op{ID: 1 << 52, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1"}
	recs := []Record{{Step: 1, Op: ops[1]}, {Step: 2, Op: crash}, {Step: 3, Op: ops[0]}, {Step: 4, Op: ops[2]}}
	a, b, c := ops[0], ops[1], ops[2]
	f := NewForced(nil, testFaults)
	f.Follow(recs)
	f.Reset(1, 0)
	if f.Ready([]*Op{&a}) {
		t.Errorf("ready while the followed run's first op (%v) is not offered", b)
	}
	if !f.Ready([]*Op{&a, &b}) {
		t.Errorf("not ready with the followed run's first op offered")
	}
	// The followed run released b, the oldest of what it was offered then.
	if i, _ := f.Next([]*Op{&b}); i != 0 {
		t.Fatalf("chose %d", i)
	}
	if !f.Ready([]*Op{&a}) {
		t.Errorf("waiting for a fault")
	}
	// The crash is not among these decisions: the forced run goes its own way.
	if i, _ := f.Next([]*Op{&a, &c}); i != 0 {
		t.Fatalf("chose %d", i)
	}
	if !f.Ready([]*Op{&a}) || f.Done() {
		t.Errorf("still following a run it left (ready %v, done %v)", f.Ready([]*Op{&a}), f.Done())
	}
	// Reset follows again from the start.
	f.Reset(1, 0)
	if f.Ready([]*Op{&c}) {
		t.Errorf("after Reset, ready without the followed run's first op")
	}
}

// TestForcedFollowsTwin: two threads of a process poll from one call site,
// one key for both; the followed run released the younger, which is no
// decision, and a forced run that follows it releases that one too, where
// the default order (and a forced run that follows nothing) takes the older.
func TestForcedFollowsTwin(t *testing.T) {
	poll := func(id uint64, thread string) Op {
		return Op{ID: id, Node: "n3", LPID: "n3/0/" + thread, Kind: Poll, Object: "inbox:n3", Site: "netpoll", Syscall: "epoll_pwait"}
	}
	older, younger := poll(1, "t1"), poll(2, "t4")
	recs := []Record{{Step: 1, Op: younger}, {Step: 2, Op: older}}
	choices := [][]Op{{older, younger}, {older}}
	ds, err := Decisions(recs, choices)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 0 {
		t.Fatalf("decisions %v: want none (one key for both polls)", ds)
	}
	for _, follow := range []bool{true, false} {
		f := NewForced(ds, testFaults)
		if follow {
			f.Follow(recs)
		}
		f.Reset(1, 0)
		a, b := older, younger
		i, err := f.Next([]*Op{&a, &b})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[follow]; i != want {
			t.Errorf("following %v: released %d, want %d", follow, i, want)
		}
	}
}

// TestForcedTimed: a Timed fault is due when the clock reaches its time,
// though the op it came after in the trace has not come (nor its loose
// anchor), and not before; Anchor puts it back after an op.
func TestForcedTimed(t *testing.T) {
	ops := testOps(3)
	quake := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: "quake", Object: "node:n1", Delay: 5}
	recs := []Record{{Step: 1, Op: ops[0]}, {Step: 2, Op: ops[1]}, {Step: 3, Op: quake, VTime: 100}, {Step: 4, Op: ops[2]}}
	ds, err := Decisions(recs, [][]Op{{ops[0], ops[1], ops[2]}, {ops[1], ops[2]}, {ops[2], quake}, {ops[2]}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ds, func(d Decision) bool { return d.Op.Kind == "quake" })
	if i < 0 || ds[i].VTime == nil || ds[i].Timed {
		t.Fatalf("decisions %v", ds)
	}
	fr := func(k Kind) FaultReplay { return FaultReplay{Remake: k == "quake"} }
	for _, timed := range []bool{false, true} {
		d := ds[i]
		if timed {
			d = d.AtItsTime()
		}
		f := NewForced([]Decision{d}, fr)
		f.Reset(1, 0)
		c := ops[2] // the only op: n1's ops[1], the fault's anchor, never comes
		for _, now := range []time.Duration{50, 99} {
			f.Clock(now)
			if x := f.Extra(now, []*Op{&c}); len(x) != 0 {
				t.Fatalf("timed %v: made %v at %v, before its time", timed, x, now)
			}
		}
		f.Clock(100)
		x := f.Extra(100, []*Op{&c})
		if got := len(x) == 1; got != timed {
			t.Fatalf("timed %v: at its time Extra made %v", timed, x)
		}
		if timed {
			if j, _ := f.Next([]*Op{&c, x[0]}); j != 1 {
				t.Errorf("the timed fault was not released at its time")
			}
		}
	}
	d := ds[i].AtItsTime()
	d.Anchor(nil)
	if d.Timed || d.Loose != nil || d.After != nil {
		t.Errorf("anchored: %+v", d)
	}
}

// TestForcedThen: with Then, the order where no decision chooses is
// Then's (the same as Then alone over the same ops, a fault or a delay
// never among its choices), the due fault still comes first, and the run forks once,
// at its first decision, with Seed.
func TestForcedThen(t *testing.T) {
	ops := testOps(6)
	alone, _, _ := simulateAll(t, &POS{}, ops)
	f := &Forced{Then: &POS{}, Seed: 1}
	var forks []int64
	f.OnFork(func(seed int64) { forks = append(forks, seed) })
	got, _, _ := simulateAll(t, f, ops)
	if !slices.Equal(got, alone) {
		t.Errorf("forced with Then released %v, Then alone %v", got, alone)
	}
	if oldest, _, _ := simulateAll(t, NewForced(nil, testFaults), ops); slices.Equal(oldest, alone) {
		t.Fatalf("POS with seed 1 gives the default order %v: the test tells nothing", oldest)
	}
	if !slices.Equal(forks, []int64{1}) {
		t.Errorf("forks %v, want one with seed 1", forks)
	}

	crash := Op{ID: 1<<52 + 1, Node: "n1", LPID: "fault", Kind: crashKind, Object: "node:n1"}
	other := crash
	other.ID, other.Node, other.Object = 1<<52+2, "n0", "node:n0"
	ds, err := Decisions([]Record{{Step: 1, Op: crash}}, [][]Op{{ops[0], crash}})
	if err != nil {
		t.Fatal(err)
	}
	f = NewForced(ds, testFaults)
	f.Then, f.Seed = &POS{}, 1
	f.Reset(1, 0)
	a, b := ops[0], ops[1]
	if j, err := f.Next([]*Op{&a, &b, &crash}); err != nil || j != 2 {
		t.Fatalf("the due crash: chose %d (%v)", j, err)
	}
	adv := Op{ID: 1<<52 + 3, Node: "n0", LPID: "n0/0/t0", Kind: Advance, Object: "time", At: 50, Delay: 50}
	for i := 0; i < 20; i++ {
		o := &Forced{Then: &POS{}, Seed: int64(i)}
		o.Reset(1, 0)
		if j, _ := o.Next([]*Op{&a, &other, &adv}); j != 0 {
			t.Fatalf("seed %d: Then chose a fault or a delay no decision names", i)
		}
	}
}
