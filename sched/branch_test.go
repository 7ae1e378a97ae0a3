package sched

import (
	"slices"
	"strings"
	"testing"
)

// TestBranch: a branch forces its prefix (any thread of the recorded
// process), makes its change at the first decision past it, and leaves
// the rest to its strategy, declining what the change keeps back.
func TestBranch(t *testing.T) {
	crash, restart := Kind("crash"), Kind("restart")
	fr := FaultReplays(func(k Kind) FaultReplay { return FaultReplay{Recovery: k == restart, Remake: k == crash} })
	a := &Op{ID: 1, LPID: "n1/0/t0", Kind: Send, Object: "sock:1", Site: "a"}
	b := &Op{ID: 2, LPID: "n2/0/t0", Kind: Send, Object: "sock:1", Site: "b"}
	c := &Op{ID: 3, LPID: "n3/0/t0", Kind: Sleep, Site: "c"}
	adv := &Op{ID: 1<<48 + 1, LPID: "clock", Kind: Advance, At: 10}
	cr := &Op{ID: 1<<52 + 1, LPID: "fault", Kind: crash, Node: "n2", Object: "node:n2"}
	rs := &Op{ID: 1<<52 + 2, LPID: "fault", Kind: restart, Node: "n1", Object: "node:n1"}
	enabled := []*Op{a, b, c, adv, cr, rs}
	// The recorded run released c first (on another thread of n3), then a.
	prefix := []Record{{Step: 1, Op: Op{LPID: "n3/0/t9", Kind: Sleep, Site: "c"}}, {Step: 2, Op: *a, Auto: true}}
	for _, tc := range []struct {
		name   string
		change Change
		wait   int
		fault  Kind
		// want is the op the branch's first decision past the prefix
		// releases (nil: Then's, the oldest); declined the ops it keeps
		// back then.
		want     *Op
		declined []*Op
	}{
		{"extend", Extend, 0, "", a, nil},
		{"flip to the racing op", Flip, 0, "", b, nil},
		{"early takes the injection", Early, 0, "", cr, nil},
		{"late declines injections and delays", Late, 2, "", a, []*Op{cr, adv}},
		{"drop declines the kind", Drop, 0, crash, a, []*Op{cr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := &Branch{Prefix: prefix, Parent: a, Change: tc.change, Wait: tc.wait, Fault: tc.fault, Then: Oldest{}, Seed: 1, Faults: fr}
			var forks []int64
			br.OnFork(func(seed int64) { forks = append(forks, seed) })
			br.Reset(99, 0)
			i, err := br.Next(enabled)
			if err != nil || enabled[i] != c || br.Recalled() == nil {
				t.Fatalf("prefix: released %v (recalled %v, err %v), want %v", enabled[i], br.Recalled(), err, c)
			}
			if len(forks) != 0 {
				t.Fatalf("forked in the prefix")
			}
			i, err = br.Next(enabled)
			if _, err := br.Next(enabled); err != nil || len(forks) != 1 || forks[0] != 1 {
				t.Errorf("forks %v (err %v), want one, with the branch's seed", forks, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if enabled[i] != tc.want {
				t.Errorf("released %v, want %v", enabled[i], tc.want)
			}
			if br.Recalled() != nil || br.Diverged != 0 {
				t.Errorf("past the prefix: recalled %v, diverged at %d", br.Recalled(), br.Diverged)
			}
			for _, o := range enabled {
				want := false
				for _, d := range tc.declined {
					want = want || d == o
				}
				if got := br.Declines(o); got != want {
					t.Errorf("Declines(%v) = %v, want %v", o, got, want)
				}
			}
		})
	}
}

// TestBranchLateEnds: Late declines for its Wait decisions only; a branch
// whose prefix is not offered says where it diverged and branches there.
func TestBranchLateEnds(t *testing.T) {
	adv := &Op{ID: 1<<48 + 1, LPID: "clock", Kind: Advance, At: 10}
	a := &Op{ID: 5, LPID: "n1/0/t0", Kind: Sleep, Site: "a"}
	br := &Branch{Prefix: []Record{{Step: 4, Op: Op{LPID: "n9/0/t0", Kind: Recv, Site: "z"}}}, Change: Late, Wait: 2, Then: Oldest{}}
	br.Reset(0, 0)
	for d := 1; d <= 4; d++ {
		if _, err := br.Next([]*Op{a, adv}); err != nil {
			t.Fatal(err)
		}
		if got, want := br.Declines(adv), d <= 2; got != want {
			t.Errorf("after decision %d: declines the advance %v, want %v", d, got, want)
		}
	}
	if br.Diverged != 4 {
		t.Errorf("diverged at %d, want step 4", br.Diverged)
	}
}

// TestBranchAim: Aim's hold is offered (Extra) once the prefix is done and
// released at the branch, once; when the prefix diverges, at the decision
// after the divergence, where Extra first offered it. A replay makes a
// made fault up from its record though its kind's are taken only as
// offered.
func TestBranchAim(t *testing.T) {
	hold := Kind("hold")
	fr := FaultReplays(func(Kind) FaultReplay { return FaultReplay{} })
	aim := &Op{LPID: "fault", Kind: hold, Node: "n1", Object: "link:n1>n2", Conn: "messages n1>n2", Shape: "APPEND", Delay: 300}
	a := &Op{ID: 1, LPID: "n1/0/t0", Kind: Sleep, Site: "a"}
	b := &Op{ID: 2, LPID: "n2/0/t0", Kind: Sleep, Site: "b"}
	for _, tc := range []struct {
		name   string
		prefix []Record
		// offered is whether the first decision's Extra offers the hold.
		offered bool
	}{
		{"at the prefix's end", []Record{{Step: 1, Op: *a}}, false},
		{"past a divergence", []Record{{Step: 1, Op: *a}, {Step: 2, Op: Op{LPID: "n9/0/t0", Kind: Recv, Site: "z"}}}, false},
		{"no prefix", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := &Branch{Prefix: tc.prefix, Change: Aim, Hold: aim, Then: Oldest{}, Seed: 1, Faults: fr}
			br.Reset(0, 0)
			released := 0
			for d := range 4 {
				enabled := []*Op{a, b}
				x := br.Extra(0, enabled)
				if d == 0 && (len(x) > 0) != tc.offered {
					t.Errorf("decision 0 offers %v", x)
				}
				enabled = append(enabled, x...)
				i, err := br.Next(enabled)
				if err != nil {
					t.Fatal(err)
				}
				if o := enabled[i]; o.Made() {
					released++
					if o.Shape != "APPEND" || o.Conn != aim.Conn || o.Delay != 300 || o.ID != aimID {
						t.Errorf("released %+v, want the branch's hold", o)
					}
				}
			}
			if released != 1 {
				t.Errorf("released the hold %d times, want once", released)
			}
		})
	}
	rec := *aim
	rec.ID = extraIDBase + 2
	r := NewReplay(&Trace{Records: []Record{{Step: 1, Op: *a}, {Step: 2, Op: rec}}}, nil, fr)
	r.Reset(1, 0)
	if _, err := r.Next([]*Op{a}); err != nil {
		t.Fatal(err)
	}
	x := r.Extra(0, []*Op{b})
	if len(x) != 1 || !x[0].Made() {
		t.Fatalf("the replay made up %v, want the recorded hold", x)
	}
	if i, err := r.Next([]*Op{b, x[0]}); err != nil || i != 1 {
		t.Fatalf("the replay released %d (%v), want the hold", i, err)
	}
	// Another kind on the same link is another op.
	other := rec
	other.Shape = "HB"
	if same(&rec, &other) {
		t.Error("holds of two kinds on one link are the same op")
	}
}

// TestBranchPrefixAsReplay: a branch's prefix is forced as replay forces a
// trace, so that an exploring campaign restarts where it meant to. Each
// row failed when the prefix had an identity of its own (any thread of the
// process, the first offered): on hashicorp/raft 11 of 14 branches of a
// campaign (seed 2) diverged before their prefix ended, 0 of 15 after.
func TestBranchPrefixAsReplay(t *testing.T) {
	// Two Go threads of one process at the same call: the recorded run
	// released t1's, which a branch must take though t0's is offered first.
	t0 := &Op{ID: 7, LPID: "n1/0/t0", Kind: Poll, Site: "p"}
	t1 := &Op{ID: 8, LPID: "n1/0/t1", Kind: Poll, Site: "p"}
	send := &Op{ID: 9, LPID: "n1/0/t0", Kind: Send, Site: "s", Object: "sock:1", Bytes: 9}
	fork := int64(42)
	for _, tc := range []struct {
		name    string
		prefix  []Record
		enabled []*Op
		want    *Op // released at the first decision (nil: it diverges there)
		forks   []int64
		why     string // what the divergence names
	}{
		{"the recorded thread", []Record{{Step: 1, Op: *t1}, {Step: 2, Op: *t0}}, []*Op{t0, t1}, t1, nil, ""},
		{"a fork the prefix records", []Record{{Step: 1, Op: *t0, Fork: &fork}, {Step: 2, Op: *t1}}, []*Op{t0, t1}, t0, []int64{42}, ""},
		{"another byte count", []Record{{Step: 1, Op: Op{ID: 9, LPID: "n1/0/t0", Kind: Send, Site: "s", Object: "sock:1", Bytes: 8}}, {Step: 2, Op: *t0}},
			[]*Op{send, t0}, nil, []int64{1}, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := &Branch{Prefix: tc.prefix, Change: Extend, Then: Oldest{}, Seed: 1}
			var forks []int64
			br.OnFork(func(seed int64) { forks = append(forks, seed) })
			br.Reset(0, 0)
			if !br.Ready(tc.enabled) {
				t.Fatalf("not ready with the prefix's op offered")
			}
			i, err := br.Next(tc.enabled)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && (tc.enabled[i] != tc.want || br.Diverged != 0) {
				t.Errorf("released %v (diverged at %d: %s), want %v", tc.enabled[i], br.Diverged, br.Why, tc.want)
			}
			if tc.want == nil && (br.Diverged != 1 || !strings.Contains(br.Why, tc.why)) {
				t.Errorf("diverged at %d (%q), want step 1 naming %s", br.Diverged, br.Why, tc.why)
			}
			if !slices.Equal(forks, tc.forks) {
				t.Errorf("forks %v, want %v", forks, tc.forks)
			}
		})
	}
	// The engine settles again, as for a replay, while the prefix's next op
	// is not offered yet; past the prefix it never waits.
	br := &Branch{Prefix: []Record{{Step: 1, Op: *t1}}, Change: Extend, Then: Oldest{}}
	br.Reset(0, 0)
	if br.Ready([]*Op{send}) {
		t.Error("ready without the prefix's op")
	}
	if _, err := br.Next([]*Op{t1}); err != nil || !br.Ready([]*Op{send}) || br.Done() {
		t.Errorf("past the prefix: ready %v, done %v (%v)", br.Ready([]*Op{send}), br.Done(), err)
	}
}

// TestBranchReverses: a Flip with Before keeps the parent's thread back
// until the Skip+1-th op like Before is released, then lets it go; it
// gives up when only the parent's thread is enabled or after Wait
// decisions. Alike ops (two threads' sends through one helper) are told
// apart by their threads.
func TestBranchReverses(t *testing.T) {
	ret := &Op{ID: 1, LPID: "s/0/t1", Kind: Send, Site: "w", Conn: "s>c"}
	msg := &Op{ID: 2, LPID: "s/0/t2", Kind: Send, Site: "w", Conn: "s>c"}
	pub := &Op{ID: 3, LPID: "s/0/t2", Kind: Recv, Site: "r", Object: "inbox:s", Conn: "p>s"}
	other := &Op{ID: 4, LPID: "p/0/t0", Kind: Send, Site: "x", Conn: "p>s"}
	create := &Op{ID: 5, LPID: "app/0/t3", Kind: Deliver, Site: "w", Object: "inbox:orders", Conn: "app>orders"}
	createToo := &Op{ID: 6, LPID: "app/0/t4", Kind: Deliver, Site: "w", Object: "inbox:orders", Conn: "app>orders"}
	pay := &Op{ID: 7, LPID: "app/0/t3", Kind: Send, Site: "w", Conn: "app>pay"}
	confirm := &Op{ID: 8, LPID: "pay/0/t1", Kind: Deliver, Site: "v", Object: "inbox:orders", Conn: "pay>orders"}
	for _, tc := range []struct {
		name           string
		parent, before *Op // ret and msg when nil
		skip           int
		wait           int
		// steps are the enabled ops at each decision past the prefix;
		// want what the branch releases at each (Then is Oldest).
		steps [][]*Op
		want  []*Op
	}{
		{
			name:  "held until the other thread's send",
			wait:  10,
			steps: [][]*Op{{ret, other}, {ret, pub}, {ret, msg}, {ret}},
			want:  []*Op{other, pub, msg, ret},
		},
		{
			name:  "skip one like it",
			skip:  1,
			wait:  10,
			steps: [][]*Op{{ret, msg}, {ret, msg}, {ret}},
			want:  []*Op{msg, msg, ret},
		},
		{
			name:  "nothing else enabled",
			wait:  10,
			steps: [][]*Op{{ret}, {ret, msg}},
			want:  []*Op{ret, ret},
		},
		{
			// A delivery's thread is its sender's: the sender goes on
			// (its next send may be what the other op waits for), its
			// deliveries like the parent's are kept back.
			name:   "a delivery",
			parent: create, before: confirm,
			wait:  10,
			steps: [][]*Op{{create, pay}, {create, createToo, confirm}, {create}},
			want:  []*Op{pay, confirm, create},
		},
		{
			name:  "wait runs out",
			wait:  2,
			steps: [][]*Op{{ret, other}, {ret, pub}, {ret, msg}},
			want:  []*Op{other, pub, ret},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := &Branch{Parent: ret, Before: msg, Skip: tc.skip, Change: Flip, Wait: tc.wait, Then: Oldest{}}
			if tc.parent != nil {
				br.Parent, br.Before = tc.parent, tc.before
			}
			br.Reset(0, 0)
			for d, en := range tc.steps {
				i, err := br.Next(en)
				if err != nil {
					t.Fatal(err)
				}
				if en[i] != tc.want[d] {
					t.Fatalf("decision %d released %v, want %v", d, en[i], tc.want[d])
				}
			}
		})
	}
}

// TestBranchNumbersFromTheStart: under a "+" strategy that counts (the
// strategy explore+ branches with), the ops the prefix forces are numbered
// too, so that the first op past it has the Nth it has in the trial, not
// in the branch; and only a decision of the strategy's own counts as
// released at once.
func TestBranchNumbersFromTheStart(t *testing.T) {
	// B's second op never conflicted; its first may.
	then, err := New("pos+", Params{Predictor: countPredictor{"B@b#1": true}})
	if err != nil {
		t.Fatal(err)
	}
	b1 := &Op{ID: 1, LPID: "B", Site: "b", Kind: Send}
	prefix := []Record{{Step: 1, Op: *b1}}
	br := &Branch{Prefix: prefix, Change: Extend, Then: then, Seed: 7}
	br.Reset(7, 0)
	i, err := br.Next([]*Op{b1})
	if err != nil || i != 0 {
		t.Fatalf("prefix: %d, %v", i, err)
	}
	if br.LastImmediate() {
		t.Errorf("a forced decision reported as released at once")
	}
	if b1.Nth != 0 {
		t.Errorf("the prefix's B numbered %d, want 0", b1.Nth)
	}
	// Past the prefix: the branch's change (Extend leaves it to Then),
	// then Then's own choices.
	a := &Op{ID: 2, LPID: "A", Site: "a", Kind: Send}
	b2 := &Op{ID: 3, LPID: "B", Site: "b", Kind: Send}
	var immediate bool
	for range 2 {
		i, err = br.Next([]*Op{a, b2})
		if err != nil {
			t.Fatal(err)
		}
		if b2.Nth != 1 {
			t.Fatalf("the second B numbered %d, want 1 (the prefix's B counted)", b2.Nth)
		}
		if i == 1 {
			immediate = br.LastImmediate()
			break
		}
	}
	if !immediate {
		t.Errorf("the second B, which never conflicted, was not released at once past the prefix")
	}
}
