package explore

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

func records(n int, faultAt int) []sched.Record {
	var rs []sched.Record
	for i := range n {
		o := sched.Op{ID: uint64(i + 1), LPID: "n1/0/t0", Kind: sched.Sleep}
		if i == faultAt {
			o = sched.Op{ID: 1<<52 + 1, LPID: "fault", Kind: "crash", Node: "n1", Object: "node:n1"}
		}
		rs = append(rs, sched.Record{Step: i + 1, Op: o})
	}
	return rs
}

// TestCorpus: only trials that showed something first are kept; a branch
// counts against its parent's energy; a full corpus lets its least
// energetic entry go.
func TestCorpus(t *testing.T) {
	counts := map[int]int{1: 10, 2: 1, 3: 1, 4: 5}
	count := func(id int) int { return counts[id] }
	c := New()
	c.Max = 2
	if c.Add(&Entry{Trial: 0, Records: records(4, -1), Features: []int{1}, NovelAt: -1}, Plan{}, count) {
		t.Error("kept a trial that showed nothing first")
	}
	c.Add(&Entry{Trial: 1, Records: records(4, -1), Features: []int{1, 2}, Novel: 1, NovelAt: 2}, Plan{}, count)
	c.Add(&Entry{Trial: 2, Records: records(4, -1), Features: []int{1, 3}, Novel: 1, NovelAt: -1}, Plan{}, count)
	// Trial 3 branched from trial 1: trial 1's energy is divided.
	c.Add(&Entry{Trial: 3, Records: records(4, -1), Features: []int{4}, Novel: 1, NovelAt: 0}, Plan{Parent: c.byTrial[1], Change: sched.Flip}, count)
	if c.Len() != 2 {
		t.Fatalf("corpus of %d, want its maximum 2", c.Len())
	}
	var kept []int
	for _, e := range c.entries {
		kept = append(kept, e.Trial)
	}
	// Energies: trial 1 (1/10+1)/√2 ≈ 0.78, trial 2 1.1, trial 3 0.2.
	if kept[0] != 1 || kept[1] != 2 {
		t.Errorf("kept trials %v, want [1 2]", kept)
	}
	if c.byTrial[1].Picks != 1 {
		t.Errorf("trial 1 picked %d times, want 1", c.byTrial[1].Picks)
	}
	// Arms: fresh 1 novel of 3, flip 1 of 1; with one of two as a prior.
	if got, want := c.arms[Fresh], (armStats{trials: 3, novel: 2}); got != want {
		t.Errorf("fresh arm %+v, want %+v", got, want)
	}
	if got, want := c.arms[1+Arm(sched.Flip)], (armStats{trials: 1, novel: 1}); got != want {
		t.Errorf("flip arm %+v, want %+v", got, want)
	}
}

// TestOdds: arms that showed more get more trials, fresh draws never
// fewer than MinFresh.
func TestOdds(t *testing.T) {
	c := New()
	count := func(int) int { return 1 }
	for i := range 20 {
		// Fresh draws never novel, flips always.
		c.Add(&Entry{Trial: i, Records: records(4, -1)}, Plan{}, count)
		c.Add(&Entry{Trial: 100 + i, Records: records(4, -1), Novel: 1, NovelAt: 1}, Plan{Parent: &Entry{Trial: -1}, Change: sched.Flip}, count)
	}
	odds := c.Freeze(count).Odds()
	if odds[Fresh] != MinFresh {
		t.Errorf("fresh odds %.3f, want the floor %v", odds[Fresh], MinFresh)
	}
	flip := odds[1+Arm(sched.Flip)]
	for a, o := range odds {
		if Arm(a) != Fresh && Arm(a) != 1+Arm(sched.Flip) && o >= flip {
			t.Errorf("arm %v odds %.3f, not below flip's %.3f", Arm(a), o, flip)
		}
	}
	sum := 0.0
	for _, o := range odds {
		sum += o
	}
	if sum < 0.999 || sum > 1.001 {
		t.Errorf("odds sum to %v", sum)
	}
}

// TestPlan: an empty view draws fresh; the same view and seed give the
// same plan; most branches of an entry whose novelty has a record keep it
// in their prefix; Drop is drawn only when a fault follows the prefix.
func TestPlan(t *testing.T) {
	if p := (*View)(nil).Plan(7, nil); p.Parent != nil {
		t.Fatalf("empty view: %v", p)
	}
	count := func(int) int { return 1 }
	c := New()
	c.Add(&Entry{Trial: 0, Records: records(100, 80), Features: []int{1}, Novel: 1, NovelAt: 60}, Plan{}, count)
	v := c.Freeze(count)
	fresh, past, drops := 0, 0, 0
	for seed := range int64(1000) {
		p := v.Plan(seed, nil)
		if q := v.Plan(seed, nil); q.String() != p.String() {
			t.Fatalf("seed %d: %v, then %v", seed, p, q)
		}
		switch {
		case p.Parent == nil:
			fresh++
			continue
		case p.Prefix > 60:
			past++
		}
		if p.Change == sched.Drop {
			drops++
			if p.Prefix > 80 || p.Fault != "crash" {
				t.Errorf("drop with no fault after the prefix: %v", p)
			}
		}
		if p.Prefix < 0 || p.Prefix > 100 {
			t.Errorf("prefix %d of 100 decisions", p.Prefix)
		}
	}
	// One fresh trial counted, novel (2/3 with the prior), no branch yet
	// (the prior's 1/2): 4 plans in 7 fresh.
	if fresh < 500 || fresh > 640 {
		t.Errorf("%d of 1000 plans fresh, want about 4000/7", fresh)
	}
	// Two thirds past the novelty, and a third of the uniform draws.
	if branches := 1000 - fresh; past < branches*3/4 {
		t.Errorf("%d of %d branches keep the novelty, want about 3/4", past, branches)
	}
	if drops == 0 {
		t.Error("no drop drawn")
	}
}

// TestGoals: a trial that came closer to an open goal than any before
// joins the corpus with no new feature; while the goal is open its
// frontier gets its share of the branches, which mostly keep its closest
// line, and stays when the corpus is full; a trial that reaches the goal
// ends it.
func TestGoals(t *testing.T) {
	count := func(int) int { return 1 }
	c := New()
	c.Max = 10
	for i := range 10 {
		c.Add(&Entry{Trial: i, Records: records(100, -1), Features: []int{i}, Novel: 1, NovelAt: 10, Goals: []Approach{{}}}, Plan{}, count)
	}
	closer := &Entry{Trial: 10, Records: records(100, -1), Features: []int{0}, NovelAt: -1, Goals: []Approach{{Words: 1, At: 70}}}
	if !c.Add(closer, Plan{}, count) {
		t.Fatal("a trial that came closer to the goal did not join")
	}
	if c.Len() != 10 || c.byTrial[10] == nil {
		t.Fatalf("the frontier left a full corpus (%d entries)", c.Len())
	}
	if c.Add(&Entry{Trial: 11, Records: records(100, -1), Goals: []Approach{{Words: 1, At: 5}}}, Plan{}, count) {
		t.Error("a trial that came only as close joined")
	}
	v := c.Freeze(count)
	from, past := 0, 0
	const n = 2000
	for seed := range int64(n) {
		p := v.Plan(seed, nil)
		if p.Parent != closer {
			continue
		}
		from++
		if p.Prefix >= 70 {
			past++
		}
	}
	// About three plans in four are branches (fresh draws paid for ten of
	// twelve trials, but a goal steers, and the fresh arm is one of
	// seven); of the branches the frontier gets its share, half less a
	// tenth, and a tenth of the rest by its energy: 0.38 of the plans,
	// where its energy alone would give it 0.08.
	if share := float64(from) / n; share < 0.3 || share > 0.46 {
		t.Errorf("the frontier got %.2f of the plans, want about 0.38", share)
	}
	if past < from*3/5 {
		t.Errorf("%d of its %d branches keep its closest line, want about 3/4", past, from)
	}
	c.Add(&Entry{Trial: 12, Records: records(100, -1), Features: []int{20}, Novel: 1, NovelAt: 1, Goals: []Approach{{Reached: true}}}, Plan{}, count)
	if v := c.Freeze(count); len(v.frontiers) != 0 {
		t.Errorf("a reached goal still has a frontier: %+v", v.frontiers)
	}
	if c.Add(&Entry{Trial: 13, Records: records(100, -1), Goals: []Approach{{Words: 2, At: 5}}}, Plan{}, count) {
		t.Error("a trial that came closer to a reached goal joined")
	}
	// When every entry is on the frontier, the least energetic leaves.
	counts := map[int]int{1: 1, 2: 1, 3: 5}
	c = New()
	c.Max = 2
	for i, f := range []int{1, 3, 2} {
		c.Add(&Entry{Trial: i, Records: records(10, -1), Features: []int{f}, Novel: 1, NovelAt: 1, Goals: []Approach{{Words: 1, At: 3}}}, Plan{}, func(id int) int { return counts[id] })
	}
	if c.byTrial[1] != nil || c.Len() != 2 {
		t.Errorf("a full frontier kept trials %v, want the least energetic (1) gone", slices.Collect(maps.Keys(c.byTrial)))
	}
}

// TestPlanAim: with holds allowed, an Aim plan holds a kind its entry's
// trial delivered after the prefix, on a link with an end among the
// aiming's nodes, for a tenth of MaxHold to all of it, rarer kinds more
// often, made just before that message's delivery; a prefix that spent
// the budget ends before the injection that spent it. Without holds the arm draws nothing and the others' odds are
// what they were.
func TestPlanAim(t *testing.T) {
	counts := map[int]int{1: 40, 2: 1, 3: 40}
	count := func(id int) int { return counts[id] }
	msgs := []Message{
		{Record: 10, From: "n1", To: "n2", Kind: 2, Shape: "VOTE", Label: `k2 "VOTE"`}, // before every prefix drawn below
		{Record: 10, From: "n3", To: "n2", Kind: 2, Shape: "VOTE", Label: `k2 "VOTE"`}, // n2 hears VOTE from another node,
		{Record: 10, From: "n1", To: "n3", Kind: 2, Shape: "VOTE", Label: `k2 "VOTE"`}, // n1 sends it to another: both scopes
		{Record: 70, From: "n1", To: "n2", Kind: 1, Shape: "HB", Label: `k1 "HB"`},
		{Record: 75, From: "n1", To: "n2", Kind: 2, Shape: "VOTE", Label: `k2 "VOTE"`},
		{Record: 80, From: "c1", To: "c2", Kind: 3, Shape: "GET", Label: `k3 "GET"`}, // no end among the nodes
		{Record: 90, From: "n2", To: "n2", Kind: 1, Shape: "HB", Label: `k1 "HB"`},   // no link
	}
	const maxHold = 500 * time.Millisecond
	entry := func() *Entry {
		return &Entry{Trial: 0, Records: records(100, 50), Features: []int{1, 2, 3}, Novel: 1, NovelAt: 60, Messages: msgs}
	}
	fr := sched.FaultReplays(func(sched.Kind) sched.FaultReplay { return sched.FaultReplay{} })
	c := New()
	c.Aiming = Aiming{Nodes: []string{"n1", "n2"}, Hold: true, MaxHold: maxHold, Budget: 2}
	c.Add(entry(), Plan{}, count)
	v := c.Freeze(count)
	aims, scopes := map[string]int{}, map[string]int{}
	for seed := range int64(2000) {
		p := v.Plan(seed, fr)
		if p.Change != sched.Aim {
			continue
		}
		a := p.Aim
		aims[a.Shape]++
		switch {
		case a.From == sched.AnyNode:
			scopes[a.Shape+" into"]++
		case a.To == sched.AnyNode:
			scopes[a.Shape+" out"]++
		default:
			scopes[a.Shape+" link"]++
		}
		if !slices.Contains([]string{"n1>n2", "n3>n2", "n1>n3", "*>n2", "n1>*"}, a.From+">"+a.To) || a.Hold < maxHold/10 || a.Hold > maxHold || a.Hold%time.Millisecond != 0 || a.Slow {
			t.Errorf("aimed %v", a)
		}
		// The hold lands on the message: the prefix stops just before
		// its delivery (every record here is a decision).
		if at := map[string][]int{"HB": {70}, "VOTE": {10, 75}}[a.Shape]; !slices.Contains(at, p.Prefix) {
			t.Errorf("%v: prefix %d, want just before one of its kind's records %v", p, p.Prefix, at)
		}
		if b, err := p.Branch(sched.Oldest{}, 1, fr); err != nil || b.Change != sched.Aim || len(b.Prefix) != p.Prefix {
			t.Errorf("branch: change %v, prefix %d, want %v, %d", b.Change, len(b.Prefix), sched.Aim, p.Prefix)
		}
	}
	if aims["HB"] == 0 || aims["VOTE"] < 10*aims["HB"] || aims["GET"] > 0 {
		t.Errorf("aims by kind %v, want mostly the rare VOTE, some HB, no GET", aims)
	}
	// VOTE: its link, every link into its receiver (n2 hears it from n1
	// and n3), every link out of its sender (n1 sends it to n2 and n3), a
	// third each on n1>n2, a half each on n3>n2 and n1>n3. HB: its link
	// alone, as n2 hears it from n1 only and n1 sends it to n2 only.
	n := aims["VOTE"]
	for _, l := range []string{"link", "into", "out"} {
		if c := scopes["VOTE "+l]; c < n/5 || c > n/2 {
			t.Errorf("VOTE aims on %s: %d of %d, want a third or so (all: %v)", l, c, n, scopes)
		}
	}
	if scopes["HB link"] != aims["HB"] {
		t.Errorf("HB aims %d, on its link %d, want all (all: %v)", aims["HB"], scopes["HB link"], scopes)
	}

	// A budget of one, spent by the crash at decision 50: the hold is
	// made instead of it.
	c = New()
	c.Aiming = Aiming{Nodes: []string{"n1", "n2"}, Hold: true, MaxHold: maxHold, Budget: 1}
	c.Add(entry(), Plan{}, count)
	v = c.Freeze(count)
	for seed := range int64(500) {
		if p := v.Plan(seed, fr); p.Change == sched.Aim && p.Prefix > 50 {
			t.Fatalf("%v: the prefix holds the injection that spent the budget", p)
		}
	}

	// No holds: the arm has no odds, and the others are those of a view
	// without it.
	c = New()
	c.Add(entry(), Plan{}, count)
	odds := c.Freeze(count).Odds()
	if o := odds[1+Arm(sched.Aim)]; o != 0 {
		t.Errorf("aim's odds without holds %v", o)
	}
	for seed := range int64(500) {
		if p := c.Freeze(count).Plan(seed, fr); p.Change == sched.Aim {
			t.Fatalf("aimed without holds: %v", p)
		}
	}
	// Fresh showed something in its one trial (a rate of 2/3 with the
	// prior), the branches none yet (the prior's 1/2), and the five
	// other arms on share the rest alike.
	if want := (2.0 / 3) / (2.0/3 + 1.0/2); math.Abs(odds[Fresh]-want) > 1e-12 {
		t.Errorf("fresh odds %v, want %v", odds[Fresh], want)
	}
	for _, a := range Arms()[1:] {
		if a == 1+Arm(sched.Aim) || a == 1+Arm(sched.Longer) {
			continue // off: nothing to aim with or lengthen
		}
		if want := (1 - odds[Fresh]) / 5; math.Abs(odds[a]-want) > 1e-12 {
			t.Errorf("%v odds %v, want %v", a, odds[a], want)
		}
	}
}

// TestPlanAimSlow: where the plan allows slow links, an Aim plan may slow
// the kind instead of holding it, each message by a tenth of MaxHold to
// all of it, for MinOutage (a tenth of MaxOutage when unset) to all of
// MaxOutage: always without holds, about half the time with them.
func TestPlanAimSlow(t *testing.T) {
	count := func(int) int { return 1 }
	msgs := []Message{{Record: 75, From: "n1", To: "n2", Kind: 2, Shape: "VOTE", Label: `k2 "VOTE"`}}
	fr := sched.FaultReplays(func(sched.Kind) sched.FaultReplay { return sched.FaultReplay{} })
	const maxHold, maxOutage = 500 * time.Millisecond, 2 * time.Second
	for _, tc := range []struct {
		hold        bool
		shortest    time.Duration
		least, most float64 // share of aims that slow
	}{{false, 0, 1, 1}, {true, 0, 0.4, 0.6}, {false, 1500 * time.Millisecond, 1, 1}} {
		c := New()
		c.Aiming = Aiming{Nodes: []string{"n1", "n2"}, Hold: tc.hold, Slow: true, MaxHold: maxHold, MaxOutage: maxOutage, MinOutage: tc.shortest, Budget: 2}
		c.Add(&Entry{Trial: 0, Records: records(100, -1), Features: []int{1}, Novel: 1, NovelAt: 60, Messages: msgs}, Plan{}, count)
		v := c.Freeze(count)
		floor := max(tc.shortest, maxOutage/10)
		aims, slows := 0, 0
		for seed := range int64(2000) {
			p := v.Plan(seed, fr)
			if p.Change != sched.Aim {
				continue
			}
			aims++
			a := p.Aim
			if !a.Slow {
				if a.While != 0 {
					t.Errorf("a hold with a while: %v", a)
				}
				continue
			}
			slows++
			if a.Hold < maxHold/10 || a.Hold > maxHold || a.While < floor || a.While > maxOutage || a.While%time.Millisecond != 0 {
				t.Errorf("slowed %v", a)
			}
			if !strings.HasPrefix(a.String(), "slow ") {
				t.Errorf("a slow aim shows %q", a)
			}
		}
		if share := float64(slows) / float64(aims); aims == 0 || share < tc.least || share > tc.most {
			t.Errorf("holds allowed %v: %d of %d aims slow, want a share in [%v, %v]", tc.hold, slows, aims, tc.least, tc.most)
		}
	}
}

// TestEnergies: each class of feature holds an equal share of the energy,
// and a feature's rarity is split among the entries that hold it, so a
// template one trial printed outweighs the many orderings every trial
// shows once.
func TestEnergies(t *testing.T) {
	const (
		kinds = iota
		templates
		orderings
	)
	class := func(id int) int { return id / 100 }
	counts := map[int]int{}
	count := func(id int) int { return counts[id] }
	// Four trials: each shows the kind 1 and the template 101, and five
	// orderings of its own (seen once); trial 3 also prints the template
	// 102, seen once.
	var entries []*Entry
	for i := range 4 {
		e := &Entry{Trial: i, Features: []int{kinds*100 + 1, templates*100 + 1}}
		for j := range 5 {
			e.Features = append(e.Features, orderings*100+10*i+j)
		}
		if i == 3 {
			e.Features = append(e.Features, templates*100+2)
		}
		entries = append(entries, e)
	}
	for _, e := range entries {
		for _, id := range e.Features {
			counts[id]++
		}
	}
	tests := []struct {
		name  string
		class func(int) int
		picks int // of trial 3
		want  []float64
	}{
		// Each class totals 1. Kinds: the one kind, a quarter to each
		// entry; templates: 101's rarity 1/4 split four ways and 102's 1,
		// of 5/4; orderings: 5 of 20 each. Trial 0: 1/4 + (1/16)/(5/4) +
		// 5/20 = 0.55; trial 3: 1/4 + (1/16+1)/(5/4) + 1/4 = 1.35.
		{"by class", class, 0, []float64{0.55, 0.55, 0.55, 1.35}},
		// One class: 1/16+1/16 = 1/8 and 5 each, 1 more for trial 3, over
		// 21.5: the orderings seen once are most of it.
		{"one class", nil, 0, []float64{5.125 / 21.5, 5.125 / 21.5, 5.125 / 21.5, 6.125 / 21.5}},
		// Branched from three times: halved.
		{"picked", class, 3, []float64{0.55, 0.55, 0.55, 0.675}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries[3].Picks = tt.picks
			got := energies(entries, count, tt.class)
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Errorf("energies %.4f, want %.4f", got, tt.want)
					break
				}
			}
		})
	}
}

// TestPlanAimGray: where grays are allowed an aim is a gray about as
// often as each other fault allowed; a gray to a node lands just before
// an answer it awaits (the first of its kind since the node asked), one
// from a node before a request it makes, and none before a message of the
// kind most of that way's earlier messages were (the gray would let it
// through). Without grays no aim is one.
func TestPlanAimGray(t *testing.T) {
	m := func(rec int, from, to, kind string, id int) Message {
		return Message{Record: rec, From: from, To: to, Kind: id, Shape: kind, Label: fmt.Sprintf("k%d %q", id, kind)}
	}
	// n1 leads and sends BEATs to n2 and n3 (its keepalive); the driver
	// tells n2 GO; n2 asks n1 and n3 (a request: n1's last message to it
	// was a keepalive, n3 had sent it nothing); both answer YES; then n1
	// sends n3 an APPEND (a request: n3 had sent it nothing since).
	msgs := []Message{
		m(10, "n1", "n2", "BEAT", 1), m(11, "n1", "n3", "BEAT", 1),
		m(20, "n1", "n2", "BEAT", 1), m(21, "n1", "n3", "BEAT", 1),
		m(30, "n1", "n2", "BEAT", 1), m(31, "n1", "n3", "BEAT", 1),
		m(40, "driver", "n2", "GO", 3),
		m(45, "n2", "n1", "ASK", 4), m(46, "n2", "n3", "ASK", 4),
		m(50, "n1", "n2", "YES", 5), m(52, "n3", "n2", "YES", 5),
		m(60, "n1", "n2", "BEAT", 1),
		m(70, "n1", "n3", "APPEND", 6),
	}
	const maxHold = 500 * time.Millisecond
	for _, tc := range []struct {
		hold, slow, gray bool
		least, most      float64 // share of aims that are grays
	}{
		{false, false, true, 1, 1},
		{true, false, true, 0.4, 0.6},
		{true, true, true, 0.25, 0.42},
		{true, true, false, 0, 0},
	} {
		plans := aimPlans(Aiming{Nodes: []string{"n1", "n2", "n3"}, Hold: tc.hold, Slow: tc.slow, Gray: tc.gray, MaxHold: maxHold, MaxOutage: time.Second, Budget: 2},
			&Entry{Trial: 0, Records: records(100, -1), Features: []int{1}, Novel: 1, NovelAt: 60, Messages: msgs}, 3000)
		aims, grays := len(plans), 0
		ways := map[string]bool{}
		for _, p := range plans {
			a := p.Aim
			if !a.Gray {
				continue
			}
			grays++
			if a.Slow || a.Hold < maxHold/10 || a.Hold > maxHold || a.Hold%time.Millisecond != 0 || !strings.HasPrefix(a.String(), "gray ") {
				t.Errorf("gray %v", a)
			}
			if (a.From == sched.AnyNode) == (a.To == sched.AnyNode) {
				t.Fatalf("a gray of no one node one way: %v", a)
			}
			way := fmt.Sprintf("%s>%s %s", a.From, a.To, a.Shape)
			ways[way] = true
			// Each record is a decision: the prefix is the record the gray
			// lands before; before n2's YES, the first one (n1's, at 50),
			// even when the prefix was drawn between the two.
			if want := map[string]int{"*>n2 YES": 50, "n1>* APPEND": 70}[way]; p.Prefix != want {
				t.Errorf("gray %v lands at %d, want %d", a, p.Prefix, want)
			}
		}
		if share := float64(grays) / float64(max(1, aims)); aims == 0 || share < tc.least || share > tc.most {
			t.Errorf("hold %v slow %v gray %v: %d of %d aims gray, want a share in [%v, %v]", tc.hold, tc.slow, tc.gray, grays, aims, tc.least, tc.most)
		}
		if tc.gray && (len(ways) != 2 || !ways["*>n2 YES"] || !ways["n1>* APPEND"]) {
			t.Errorf("grays drawn: %v, want those into n2 before its first answer YES and out of n1 before its request APPEND", ways)
		}
	}
}

// TestPlanAimDrop: where the plan allows drops, an aim may lose one
// datagram of a kind on one link, each link and kind as likely wherever
// the prefix was drawn, landing just before the parent's first delivery
// of it (so that it is in flight), or where the budget's room ends the
// prefix (it is armed there), never a stream's message; a plan with holds
// too draws a drop about half the time.
func TestPlanAimDrop(t *testing.T) {
	msgs := []Message{
		{Record: 30, From: "n1", To: "n2", Kind: 6, Shape: "CANCEL", Label: `k6 "CANCEL"`, Datagram: true},
		{Record: 75, From: "n1", To: "n2", Kind: 2, Shape: "YES", Label: `k2 "YES"`, Datagram: true},
		{Record: 80, From: "n2", To: "n1", Kind: 3, Shape: "ACK", Label: `k3 "ACK"`},
		{Record: 90, From: "n3", To: "n2", Kind: 4, Shape: "BEAT", Label: `k4 "BEAT"`, Datagram: true},
		{Record: 92, From: "n2", To: "n1", Kind: 5, Shape: "BYE", Label: `k5 "BYE"`, Datagram: true},
		{Record: 95, From: "n3", To: "n2", Kind: 4, Shape: "BEAT", Label: `k4 "BEAT"`, Datagram: true},
	}
	for _, tc := range []struct {
		name        string
		hold        bool
		faultAt     int // the parent's one injection (-1: none)
		least, most float64
		prefixes    map[int]int // kind -> the prefix a drop of it runs
	}{
		{"drops alone", false, -1, 1, 1, map[int]int{2: 75, 4: 90, 5: 92, 6: 30}},
		{"holds too", true, -1, 0.4, 0.6, map[int]int{2: 75, 4: 90, 5: 92, 6: 30}},
		{"the budget spent at 85", false, 85, 1, 1, map[int]int{2: 75, 4: 85, 5: 85, 6: 30}},
	} {
		plans := aimPlans(Aiming{Nodes: []string{"n1", "n2"}, Hold: tc.hold, Drop: true, MaxHold: 500 * time.Millisecond, Budget: 1},
			&Entry{Trial: 0, Records: records(100, tc.faultAt), Features: []int{1}, Novel: 1, NovelAt: 60, Messages: msgs}, 2000)
		aims, drops := len(plans), 0
		landed := map[int]int{}
		for _, p := range plans {
			a := p.Aim
			if !a.Drop {
				continue
			}
			drops++
			if a.Kind == 3 || a.Hold != 0 || a.Slow || a.Gray || !strings.HasPrefix(a.String(), "drop ") {
				t.Fatalf("%s: drop aim %+v (%s)", tc.name, a, a)
			}
			at := tc.prefixes[a.Kind]
			if p.Prefix != at { // records(…) makes every record a decision
				t.Fatalf("%s: a drop of %s with prefix %d, want %d", tc.name, a, p.Prefix, at)
			}
			landed[a.Kind]++
		}
		if share := float64(drops) / float64(aims); aims == 0 || share < tc.least || share > tc.most {
			t.Errorf("%s: %d of %d aims drop, want a share in [%v, %v]", tc.name, drops, aims, tc.least, tc.most)
		}
		if len(landed) != len(tc.prefixes) {
			t.Errorf("%s: drops of kinds %v, want %v", tc.name, landed, tc.prefixes)
		}
		// Each link and kind as likely, wherever the prefix was drawn: the
		// CANCEL, sent before most drawn prefixes, too.
		if share := float64(landed[6]) / float64(drops); share < 0.15 || share > 0.35 {
			t.Errorf("%s: %d of %d drops lose the CANCEL, want about a quarter", tc.name, landed[6], drops)
		}
	}
}

// aimPlans are the Aim plans of the first n seeds' trials, branching from
// a corpus of the one entry e under aiming a.
func aimPlans(a Aiming, e *Entry, n int64) []Plan {
	count := func(int) int { return 1 }
	fr := sched.FaultReplays(func(sched.Kind) sched.FaultReplay { return sched.FaultReplay{} })
	c := New()
	c.Aiming = a
	c.Add(e, Plan{}, count)
	v := c.Freeze(count)
	var out []Plan
	for seed := range n {
		if p := v.Plan(seed, fr); p.Change == sched.Aim {
			out = append(out, p)
		}
	}
	return out
}

// TestPlanFlip: half the flips reverse one of their entry's races past
// what it showed first, the likelier the more trials kept its order and
// the fewer reversed it; its prefix
// ends just before the race's first op, and its branch keeps that op's
// thread back until the op like the second that came as many ops like it
// later. The other half, and every flip of an entry with no race,
// release another op for one decision.
func TestPlanFlip(t *testing.T) {
	count := func(int) int { return 1 }
	fr := sched.FaultReplays(func(sched.Kind) sched.FaultReplay { return sched.FaultReplay{} })
	recs := records(100, -1)
	for _, i := range []int{25, 40} {
		recs[i].Op = sched.Op{ID: uint64(i + 1), LPID: "n2/0/t0", Kind: sched.Send, Site: "b", Conn: "n2>n1"}
	}
	invariant := Race{A: 10, B: 40, Order: "x\x00y", Reverse: "y\x00x"}
	either := Race{A: 20, B: 30, Order: "p\x00q", Reverse: "q\x00p"}
	oneWay := Race{A: 50, B: 55, Order: "r\x00s", Reverse: "s\x00r", OneWay: true}
	c := New()
	// Ten trials keep x before y; five show p before q, five q before p.
	for i := range 10 {
		rs := []Race{{A: 1, B: 2, Order: invariant.Order, Reverse: invariant.Reverse}}
		rs = append(rs, Race{A: 3, B: 4, Order: []string{either.Order, either.Reverse}[i%2], Reverse: []string{either.Reverse, either.Order}[i%2]})
		c.Add(&Entry{Trial: i, Records: records(5, -1), Races: rs}, Plan{}, count)
	}
	// Showed something first at record 5: every race is past it.
	e := &Entry{Trial: 10, Records: recs, Features: []int{1}, Novel: 1, NovelAt: 5, Races: []Race{invariant, either, oneWay}}
	if !c.Add(e, Plan{}, count) {
		t.Fatal("the entry was not kept")
	}
	plain := &Entry{Trial: 11, Records: records(100, -1), Features: []int{2}, Novel: 1, NovelAt: 60}
	c.Add(plain, Plan{}, count)
	v := c.Freeze(count)
	picked := map[[2]int]int{}
	flips, oneDecision := 0, 0
	for seed := range int64(3000) {
		p := v.Plan(seed, fr)
		if p.Change != sched.Flip {
			continue
		}
		if p.Parent == plain {
			if p.Race != [2]int{} {
				t.Fatalf("a flip of an entry with no race reverses %v", p.Race)
			}
			continue
		}
		flips++
		if p.Race == [2]int{} {
			oneDecision++ // half the flips: another op for one decision
			continue
		}
		picked[p.Race]++
		if p.Prefix != p.Race[0] || p.Wait != flipWait+2*(p.Race[1]-p.Race[0]) { // every record a decision
			t.Fatalf("flip of %v: prefix %d, wait %d", p.Race, p.Prefix, p.Wait)
		}
		b, err := p.Branch(sched.Oldest{}, 1, fr)
		if err != nil {
			t.Fatal(err)
		}
		if b.Parent == nil || b.Parent.ID != recs[p.Race[0]].Op.ID || b.Before == nil || b.Before.ID != recs[p.Race[1]].Op.ID {
			t.Fatalf("flip of %v: branch keeps back %v until %v", p.Race, b.Parent, b.Before)
		}
		if p.Race == [2]int{10, 40} && b.Skip != 1 {
			t.Errorf("flip of %v: skips %d ops like its second, want 1 (record 25)", p.Race, b.Skip)
		}
	}
	total := picked[[2]int{10, 40}] + picked[[2]int{20, 30}] + picked[[2]int{50, 55}]
	if flips == 0 || total == 0 || len(picked) != 3 {
		t.Fatalf("%d flips reversed %v", flips, picked)
	}
	if share := float64(oneDecision) / float64(flips); share < 0.4 || share > 0.6 {
		t.Errorf("%d of %d flips released another op for one decision, want about half", oneDecision, flips)
	}
	// Weights 12 (x before y in 11 trials, never reversed), 7/6 and 1.
	if share := float64(picked[[2]int{10, 40}]) / float64(total); share < 0.75 || share > 0.93 {
		t.Errorf("the invariant race reversed in %.2f of the flips (%v), want about 0.85", share, picked)
	}
}

// TestPlanLonger: a Longer plan makes one of its entry's injections of a
// kind the campaign may lengthen, and shorter than the longest, last the
// longest: its prefix ends with that injection, whose record in the
// branch carries the new length (the entry's own records keep theirs). A
// made fault, one at its longest and one of another kind are never drawn;
// an entry with none extends instead. Without Lasts the arm has no odds.
func TestPlanLonger(t *testing.T) {
	count := func(int) int { return 1 }
	recs := records(100, -1)
	fault := func(i int, kind sched.Kind, delay time.Duration, shape sched.Bytes) {
		recs[i].Op = sched.Op{ID: 1<<52 + uint64(i), LPID: "fault", Kind: kind, Node: "n1", Object: "node:n1", Delay: int64(delay), Shape: shape}
	}
	fault(10, "partition", 2*time.Second, "")
	fault(30, "pause", 500*time.Millisecond, "")
	fault(40, "partition", 9*time.Second, "")   // at its longest
	fault(50, "hold", time.Second, "")          // not a kind it may lengthen
	fault(60, "partition", time.Second, "VOTE") // made by a branch
	fault(70, "crash", time.Second, "")         // the plan gives crashes no length
	lasts := map[sched.Kind]time.Duration{"partition": 9 * time.Second, "pause": 4 * time.Second}
	c := New()
	c.Lasts = lasts
	c.Add(&Entry{Trial: 0, Records: recs, Features: []int{1}, Novel: 1, NovelAt: 5}, Plan{}, count)
	v := c.Freeze(count)
	if v.Odds()[1+Arm(sched.Longer)] == 0 {
		t.Fatal("the Longer arm has no odds")
	}
	made := map[int]int{}
	for seed := range int64(2000) {
		p := v.Plan(seed, nil)
		if p.Change != sched.Longer {
			continue
		}
		d := p.Prefix - 1
		made[d]++
		kind := recs[d].Op.Kind
		if p.Length != lasts[kind] {
			t.Errorf("%v: length %v, want the %s's longest %v", p, p.Length, kind, lasts[kind])
		}
		b, err := p.Branch(sched.Oldest{}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Prefix) != d+1 || b.Prefix[d].Op.Delay != int64(p.Length) {
			t.Errorf("%v: branch prefix of %d ending with delay %v", p, len(b.Prefix), time.Duration(b.Prefix[len(b.Prefix)-1].Op.Delay))
		}
		if want := fmt.Sprintf("then longer %s to %v", kind, p.Length); !strings.HasSuffix(p.String(), want) {
			t.Errorf("plan %q, want it to end %q", p, want)
		}
	}
	if len(made) != 2 || made[10] < 50 || made[30] < 50 {
		t.Errorf("lengthened at decisions %v, want 10 and 30 alike", made)
	}
	if recs[10].Op.Delay != int64(2*time.Second) {
		t.Errorf("the entry's own record was changed: %v", time.Duration(recs[10].Op.Delay))
	}

	// Nothing to lengthen: extend.
	c = New()
	c.Lasts = map[sched.Kind]time.Duration{"pause": 4 * time.Second}
	c.Add(&Entry{Trial: 0, Records: records(100, 50), Features: []int{1}, Novel: 1, NovelAt: 5}, Plan{}, count)
	for seed := range int64(300) {
		if p := c.Freeze(count).Plan(seed, nil); p.Change == sched.Longer {
			t.Fatalf("lengthened a crash the plan gives no length: %v", p)
		}
	}

	// No Lasts: no odds, and the plans drawn are those of a campaign
	// without the arm.
	c = New()
	c.Add(&Entry{Trial: 0, Records: recs, Features: []int{1}, Novel: 1, NovelAt: 5}, Plan{}, count)
	if o := c.Freeze(count).Odds()[1+Arm(sched.Longer)]; o != 0 {
		t.Errorf("longer's odds without Lasts %v", o)
	}
}
