package faults

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

const ms = time.Millisecond

var nodes = []string{"s1", "s2", "s3", "client"}

func plan(kinds ...sched.Kind) Plan {
	return Plan{Kinds: kinds, Nodes: []string{"s1", "s2", "s3"}, Budget: 1, Until: 10 * time.Second, MaxPause: time.Second}
}

func addrs(a netip.Addr) string {
	return map[string]string{"10.0.0.1": "s1", "10.0.0.2": "s2", "10.0.0.3": "s3", "10.0.0.4": "client"}[a.String()]
}

// The injection on offer stays the same op until chosen, its kind and
// target come from the seed, and the budget ends the offers.
func TestOfferAndBudget(t *testing.T) {
	in := newEager(plan(Crash, Partition, Pause), nodes, 1)
	a := in.Offer(0, Targets{})
	if len(a) != 1 || a[0].LPID != "fault" || !a[0].Kind.IsFault() {
		t.Fatalf("offer %v", a)
	}
	if b := in.Offer(5*ms, Targets{}); len(b) != 1 || b[0] != a[0] {
		t.Fatalf("offer changed: %v then %v", a, b)
	}
	if _, err := in.Chose(a[0], 0); err != nil {
		t.Fatal(err)
	}
	for _, o := range in.Offer(0, Targets{}) {
		if o.Kind == Crash || o.Kind == Partition || o.Kind == Pause {
			t.Fatalf("budget spent, still offered %v", o)
		}
	}
	kinds := map[sched.Kind]bool{}
	targets := map[string]bool{}
	for seed := int64(0); seed < 60; seed++ {
		o := newEager(plan(Crash, Partition, Pause), nodes, seed).Offer(0, Targets{})[0]
		kinds[o.Kind], targets[o.Node] = true, true
		if again := newEager(plan(Crash, Partition, Pause), nodes, seed).Offer(0, Targets{})[0]; *again != *o {
			t.Fatalf("seed %d: %v then %v", seed, o, again)
		}
	}
	if len(kinds) != 3 || len(targets) != 3 || targets["client"] {
		t.Fatalf("drawn kinds %v, targets %v", kinds, targets)
	}
}

func TestWindow(t *testing.T) {
	p := plan(Crash)
	p.From, p.Until = 100*ms, 200*ms
	in := newEager(p, nodes, 1)
	for _, tt := range []struct {
		now  time.Duration
		want int
	}{{0, 0}, {100 * ms, 1}, {199 * ms, 1}, {200 * ms, 0}} {
		if got := len(in.Offer(tt.now, Targets{})); got != tt.want {
			t.Errorf("at %v: %d offers, want %d", tt.now, got, tt.want)
		}
	}
}

// A crash offers its restart; the quiet period restarts and heals what is
// still down and ends every offer.
func TestCrashRestartQuiet(t *testing.T) {
	p := plan(Crash)
	p.Budget = 2
	in := newEager(p, nodes, 3)
	c := in.Offer(0, Targets{})[0]
	e, err := in.Chose(c, 0)
	if err != nil || e.Kind != Crash || !in.Crashed(c.Node) {
		t.Fatalf("crash: %v %v", e, err)
	}
	var restart *sched.Op
	for _, o := range in.Offer(0, Targets{}) {
		if o.Kind == Restart {
			restart = o
		}
	}
	if restart == nil || restart.Node != c.Node {
		t.Fatalf("no restart of %s offered", c.Node)
	}
	if d, ok := in.Deadline(0); !ok || d != p.Until {
		t.Fatalf("deadline %v %v, want the quiet period at %v", d, ok, p.Until)
	}
	if in.Quiet(time.Second) || !in.Quiet(p.Until) {
		t.Fatal("quiet period not due exactly at Until")
	}
	rec := in.Recover()
	if len(rec) != 1 || rec[0].Kind != Restart || rec[0].Node != c.Node || in.Crashed(c.Node) {
		t.Fatalf("recover: %v", rec)
	}
	if o := in.Offer(p.Until, Targets{}); len(o) != 0 {
		t.Fatalf("offers in the quiet period: %v", o)
	}
}

// A partition holds deliveries and connects across the cut, both ways, and
// nothing else; a pause holds its node's own ops until it ends.
func TestHolds(t *testing.T) {
	in := newEager(plan(Partition), nodes, 1)
	part := &sched.Op{ID: 1 << 60, LPID: "fault", Kind: Partition, Node: "s1", Object: "node:s1"}
	e, err := in.Chose(part, 0)
	if err != nil || len(e.Cut) != 1 || e.Cut[0] != "s1" || len(e.Rest) != 3 {
		t.Fatalf("partition effect %+v %v", e, err)
	}
	tests := []struct {
		op   sched.Op
		want bool
	}{
		{sched.Op{Kind: sched.Deliver, Node: "s1", Conn: "10.0.0.1:7000>10.0.0.2:4000"}, true},
		{sched.Op{Kind: sched.Deliver, Node: "s2", Conn: "10.0.0.2:4000>10.0.0.1:7000"}, true},
		{sched.Op{Kind: sched.Deliver, Node: "s2", Conn: "10.0.0.2:4000>10.0.0.3:7000"}, false},
		{sched.Op{Kind: sched.Connect, Node: "client", Peer: "10.0.0.1:7000"}, true},
		{sched.Op{Kind: sched.Connect, Node: "client", Peer: "10.0.0.1:7000", NonBlocking: true}, false},
		{sched.Op{Kind: sched.Connect, Node: "client", Peer: "10.0.0.3:7000"}, false},
		{sched.Op{Kind: sched.Send, Node: "s1", Peer: "10.0.0.2:4000"}, false},
	}
	for _, tt := range tests {
		if got := in.Holds(&tt.op, 0, addrs); got != tt.want {
			t.Errorf("%v %s: held %v, want %v", tt.op.Kind, tt.op.Conn+tt.op.Peer, got, tt.want)
		}
	}
	heal := in.Offer(0, Targets{})
	if len(heal) != 1 || heal[0].Kind != Heal {
		t.Fatalf("offers while cut: %v", heal)
	}
	if _, err := in.Chose(heal[0], 0); err != nil {
		t.Fatal(err)
	}
	if in.Holds(&tests[0].op, 0, addrs) {
		t.Fatal("healed, still held")
	}

	in = newEager(plan(Pause), nodes, 1)
	pause := in.Offer(0, Targets{})[0]
	if pause.Delay < int64(100*ms) || pause.Delay > int64(time.Second) {
		t.Fatalf("pause of %v, want 100ms..1s", time.Duration(pause.Delay))
	}
	if _, err := in.Chose(pause, 50*ms); err != nil {
		t.Fatal(err)
	}
	end := 50*ms + time.Duration(pause.Delay)
	own := &sched.Op{Kind: sched.Recv, Node: pause.Node}
	other := &sched.Op{Kind: sched.Recv, Node: "client"}
	if !in.Holds(own, end-1, addrs) || in.Holds(other, end-1, addrs) {
		t.Fatal("a pause holds its own node's ops only")
	}
	if d, ok := in.Deadline(60 * ms); !ok || d != end {
		t.Fatalf("pause deadline %v %v, want %v", d, ok, end)
	}
	if in.Holds(own, end, addrs) {
		t.Fatal("still held after the pause")
	}
}

// A crash or partition lasts the outage drawn with it before its recovery
// is offered, and the end of the outage is a deadline the clock can jump to.
func TestOutage(t *testing.T) {
	for _, kind := range []sched.Kind{Crash, Partition} {
		p := plan(kind)
		p.MaxOutage = 2 * time.Second
		in := newEager(p, nodes, 5)
		o := in.Offer(100*ms, Targets{})[0]
		d := time.Duration(o.Delay)
		if d < 200*ms || d > 2*time.Second {
			t.Fatalf("%v: outage %v, want 200ms..2s", kind, d)
		}
		if _, err := in.Chose(o, 100*ms); err != nil {
			t.Fatal(err)
		}
		end := 100*ms + d
		if offers := in.Offer(end-1, Targets{}); len(offers) != 0 {
			t.Fatalf("%v: recovery offered during the outage: %v", kind, offers)
		}
		if got, ok := in.Deadline(100 * ms); !ok || got != end {
			t.Fatalf("%v: deadline %v %v, want the outage's end %v", kind, got, ok, end)
		}
		if offers := in.Offer(end, Targets{}); len(offers) != 1 || (offers[0].Kind != Restart && offers[0].Kind != Heal) {
			t.Fatalf("%v: at the outage's end: %v", kind, offers)
		}
	}
}

// A partition that cuts off a node in a group cuts off the whole group:
// the client beside the server still reaches it, the others do not.
func TestPartitionGroup(t *testing.T) {
	p := plan(Partition)
	p.Groups = [][]string{{"s1", "client"}}
	in := newEager(p, nodes, 1)
	part := &sched.Op{ID: 1 << 60, LPID: "fault", Kind: Partition, Node: "s1", Object: "node:s1", Delay: int64(time.Second)}
	e, err := in.Chose(part, 0)
	if err != nil || len(e.Cut) != 2 || e.Cut[0] != "s1" || e.Cut[1] != "client" || len(e.Rest) != 2 {
		t.Fatalf("partition effect %+v %v", e, err)
	}
	for _, tt := range []struct {
		op   sched.Op
		want bool
	}{
		{sched.Op{Kind: sched.Connect, Node: "client", Peer: "10.0.0.1:7000"}, false},
		{sched.Op{Kind: sched.Deliver, Node: "client", Conn: "10.0.0.4:4000>10.0.0.1:7000"}, false},
		{sched.Op{Kind: sched.Connect, Node: "client", Peer: "10.0.0.2:7000"}, true},
		{sched.Op{Kind: sched.Deliver, Node: "s2", Conn: "10.0.0.2:4000>10.0.0.1:7000"}, true},
	} {
		if got := in.Holds(&tt.op, 0, addrs); got != tt.want {
			t.Errorf("%v %s: held %v, want %v", tt.op.Kind, tt.op.Conn+tt.op.Peer, got, tt.want)
		}
	}
	if early := in.Offer(time.Second-1, Targets{}); len(early) != 0 {
		t.Fatalf("offers before the outage ended: %v", early)
	}
	heal := in.Offer(time.Second, Targets{})
	if len(heal) != 1 || heal[0].Kind != Heal {
		t.Fatalf("offers once the outage ended: %v", heal)
	}
	if e, err := in.Chose(heal[0], time.Second); err != nil || len(e.Cut) != 2 {
		t.Fatalf("heal effect %+v %v", e, err)
	}
}

// A reset is offered only for a node with a connection, names one of that
// node's sockets (drawn from the seed), is withdrawn when the socket goes,
// and tells the engine which socket to abort.
func TestReset(t *testing.T) {
	socks := []Sock{
		{Node: "s1", Object: "sock:s1/0/fd5", Conn: "10.0.0.1:7000>10.0.0.4:40001"},
		{Node: "s1", Object: "sock:s1/0/fd6", Conn: "10.0.0.1:7000>10.0.0.4:40002"},
		{Node: "s2", Object: "sock:s2/0/fd5", Conn: "10.0.0.2:7000>10.0.0.4:40003"},
	}
	if o := newEager(plan(Reset), nodes, 1).Offer(0, Targets{}); len(o) != 0 {
		t.Fatalf("reset offered with no connection: %v", o)
	}
	picked := map[string]bool{}
	for seed := int64(0); seed < 40; seed++ {
		in := newEager(plan(Reset), nodes, seed)
		o := in.Offer(0, Targets{Socks: socks})
		if len(o) != 1 || o[0].Kind != Reset {
			t.Fatalf("seed %d: offer %v", seed, o)
		}
		i := slices.IndexFunc(socks, func(s Sock) bool { return s.Object == o[0].Object })
		if i < 0 || socks[i].Node != o[0].Node || socks[i].Conn != o[0].Conn || o[0].Peer != "10.0.0.4:"+socks[i].Conn[len(socks[i].Conn)-5:] {
			t.Fatalf("seed %d: %+v names no socket of its node", seed, *o[0])
		}
		picked[o[0].Object] = true
		if again := newEager(plan(Reset), nodes, seed).Offer(0, Targets{Socks: socks})[0]; *again != *o[0] {
			t.Fatalf("seed %d: %v then %v", seed, o[0], again)
		}
		// The socket closes: the offer moves to another one.
		rest := slices.DeleteFunc(slices.Clone(socks), func(s Sock) bool { return s.Object == o[0].Object })
		if n := in.Offer(0, Targets{Socks: rest}); len(n) != 1 || n[0].Object == o[0].Object {
			t.Fatalf("seed %d: offered %v after its socket closed", seed, n)
		}
		e, err := in.Chose(in.Offer(0, Targets{Socks: socks})[0], 0)
		if err != nil || e.Kind != Reset || e.Sock == "" {
			t.Fatalf("seed %d: effect %+v, %v", seed, e, err)
		}
		if o := in.Offer(0, Targets{Socks: socks}); len(o) != 0 {
			t.Fatalf("seed %d: budget spent, still offered %v", seed, o)
		}
	}
	if len(picked) != len(socks) {
		t.Fatalf("drew only %v", picked)
	}
}

// A drift's rate lies within a tenth of the bound to all of it, either way,
// and the quiet period ends it.
func TestDriftBounds(t *testing.T) {
	p := plan(ClockDrift)
	p.MaxDrift = 50_000
	signs := map[bool]bool{}
	for seed := int64(0); seed < 40; seed++ {
		in := newEager(p, nodes, seed)
		o := in.Offer(0, Targets{})[0]
		if a := max(o.Delay, -o.Delay); a < 5_000 || a > 50_000 {
			t.Fatalf("seed %d: drift %d ppm outside 5000-50000", seed, o.Delay)
		}
		signs[o.Delay > 0] = true
		e, err := in.Chose(o, time.Second)
		if err != nil || e.Drift != o.Delay || e.Node != o.Node {
			t.Fatalf("seed %d: effect %+v, %v", seed, e, err)
		}
		rec := in.Recover()
		if len(rec) != 1 || rec[0].Kind != ClockDrift || rec[0].Drift != 0 || rec[0].Node != o.Node {
			t.Fatalf("seed %d: recoveries %+v, want the drift ended", seed, rec)
		}
	}
	if len(signs) != 2 {
		t.Fatal("drifts went one way only")
	}
	if o := newEager(plan(ClockDrift), nodes, 1).Offer(0, Targets{}); len(o) != 0 {
		t.Fatalf("drift offered with no bound: %v", o)
	}
}

// newEager is New with every trigger at the window's start, for tests of
// what happens once an injection is offered.
func newEager(plan Plan, all []string, seed int64) *Injector {
	in := New(plan, all, seed)
	in.place = nil
	return in
}

// Each injection is offered only from its trigger on, the triggers spread
// over the window, and the next trigger is a deadline the clock may jump
// to.
func TestTriggers(t *testing.T) {
	p := plan(Crash)
	p.From, p.Until, p.Budget, p.Spread = time.Second, 11*time.Second, 2, true
	if in := New(plan(Crash), nodes, 1); in.place != nil || len(in.Offer(0, Targets{})) != 1 {
		t.Fatalf("a plan not spread has triggers %v", in.place)
	}
	var tenths [10]int
	const trials = 2000
	for seed := int64(0); seed < trials; seed++ {
		in := New(p, nodes, seed)
		for k := 0; k < 2; k++ {
			times, _ := in.place.Pending()
			tr := times[0]
			if tr < p.From || tr >= p.Until {
				t.Fatalf("seed %d: trigger %v outside [%v, %v)", seed, tr, p.From, p.Until)
			}
			if d, ok := in.Deadline(tr - 1); !ok || d != tr {
				t.Fatalf("seed %d: deadline %v %v before trigger %v", seed, d, ok, tr)
			}
			if tr > p.From {
				if o := in.Offer(tr-1, Targets{}); len(o) != 0 {
					t.Fatalf("seed %d: offered %v before trigger %v", seed, o, tr)
				}
			}
			o := in.Offer(tr, Targets{})
			if len(o) != 1 {
				t.Fatalf("seed %d: no offer at trigger %v", seed, tr)
			}
			if _, err := in.Chose(o[0], tr); err != nil {
				t.Fatal(err)
			}
			tenths[int((tr-p.From)*10/(p.Until-p.From))]++
			if again, _ := New(p, nodes, seed).place.Pending(); again[k] != tr {
				t.Fatalf("seed %d: trigger %v then %v", seed, tr, again)
			}
			in.Recover()
			in.quiet = false // keep injecting for the test
		}
	}
	for i, n := range tenths {
		if n > 2*trials/5 || n < 2*trials/20 {
			t.Errorf("tenth %d of the window holds %d of %d injections: %v", i, n, 2*trials, tenths)
		}
	}
}

// A clock fault goes the way the plan says; the quiet period sets the
// clock back unless told to keep it.
func TestClockDirection(t *testing.T) {
	for _, tt := range []struct {
		dir        Direction
		keep       bool
		fwd, bwd   bool // seen
		wantUndone bool
	}{
		{Both, false, true, true, true},
		{Forward, false, true, false, true},
		{Backward, true, false, true, false},
	} {
		p := plan(ClockJump, ClockDrift)
		p.MaxClockJump, p.MaxDrift, p.ClockDirection, p.KeepClock = time.Second, 1000, tt.dir, tt.keep
		fwd, bwd := false, false
		for seed := int64(0); seed < 50; seed++ {
			in := newEager(p, nodes, seed)
			o := in.Offer(0, Targets{})[0]
			if o.Delay > 0 {
				fwd = true
			} else {
				bwd = true
			}
			if _, err := in.Chose(o, 0); err != nil {
				t.Fatal(err)
			}
			undone := false
			for _, e := range in.Recover() {
				undone = undone || e.Kind == ClockJump
			}
			if o.Kind == ClockJump && undone != tt.wantUndone {
				t.Errorf("%v keep=%v: quiet period undid the jump: %v", tt.dir, tt.keep, undone)
			}
		}
		if fwd != tt.fwd || bwd != tt.bwd {
			t.Errorf("%v: forward seen %v, backward seen %v", tt.dir, fwd, bwd)
		}
	}
}

// In a lull, a spread injection is taken at its trigger; a partition waits
// for the next burst unless the quiet period comes first; an unspread plan
// and recoveries wait.
func TestInLull(t *testing.T) {
	for _, tt := range []struct {
		kind   sched.Kind
		spread bool
		next   time.Duration
		wakes  bool
		take   bool
	}{
		{Crash, true, 3 * time.Second, true, true},
		{Pause, true, 0, false, true},
		{Crash, false, 3 * time.Second, true, false},
		{Partition, true, 3 * time.Second, true, false},
		{Partition, true, 20 * time.Second, true, true},
		{Partition, true, 0, false, true},
	} {
		p := plan(tt.kind)
		p.Spread = tt.spread
		in := New(p, nodes, 1)
		at := p.Until - 1
		offers := in.Offer(at, Targets{})
		if got := in.InLull(offers, tt.next, tt.wakes); (got != nil) != tt.take {
			t.Errorf("%v spread=%v next=%v: took %v, want %v", tt.kind, tt.spread, tt.next, got, tt.take)
		}
	}
	var none *Injector
	if none.InLull(nil, 0, false) != nil {
		t.Error("a nil injector offered something")
	}
}
